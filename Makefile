# The two commands a newcomer runs are `make demo` and `make test`; both run the set-up first when needed.
GO ?= go
SHARED ?= ../shared

.PHONY: setup test demo compare bench fuzz

# Installs libtorch when missing and prepares third_party/gotch; returns at once when nothing changed.
setup:
	$(GO) run ./cmd/setup

test: setup
	$(GO) vet ./...
	$(GO) test -timeout 20m ./...

# The demo trains DSE on a small randomly initialised BERT over the shared corpora (about 15 minutes on CPU).
demo: setup
	$(GO) run ./cmd/train --resume experiments/dse_small_cpu.toml
	@echo "model: runs/dse_small_cpu/model  metrics: runs/dse_small_cpu/metrics.jsonl  loss curve: runs/dse_small_cpu/loss.png"

# The papers' similarity-based tables for the demo's model beside its untrained backbone (run make demo first).
compare: setup
	$(GO) run ./cmd/evaluate suite --model experiments/dse_small_cpu.toml --output-dir runs/eval/untrained
	$(GO) run ./cmd/evaluate suite --model runs/dse_small_cpu --output-dir runs/eval/dse_small_cpu
	$(GO) run ./cmd/evaluate report --output runs/eval/report.md runs/eval/untrained runs/eval/dse_small_cpu
	@cat runs/eval/report.md

bench: setup
	$(GO) test -run XXX -bench . -benchtime 20x ./models

fuzz: setup
	$(GO) test -run XXX -fuzz FuzzHeader -fuzzminimizetime 3s -fuzztime 60s ./safetensors
	$(GO) test -run XXX -fuzz FuzzReadPickle -fuzzminimizetime 3s -fuzztime 60s ./models/torchbin
	$(GO) test -run XXX -fuzz FuzzDecodeCache -fuzzminimizetime 3s -fuzztime 60s ./datasets
	$(GO) test -run XXX -fuzz FuzzLoadExperiment -fuzzminimizetime 3s -fuzztime 60s ./experiment
