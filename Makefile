# The two commands a newcomer runs are `make demo` and `make test`; both run the set-up first when needed.
GO ?= go
SHARED ?= ../shared

# CONVREP_OFFLINE=DIR: build with no network from a bundle of `go run ./cmd/setup bundle --to DIR [--go]` (made
# where the module proxy is reachable): nothing is downloaded, the modules come from vendor/ (which the set-up
# unpacks), and the bundle's Go toolchain is used when it holds one.
ifneq ($(CONVREP_OFFLINE),)
export GOPROXY := off
export GOTOOLCHAIN := local
export GOSUMDB := off
ifneq ($(wildcard $(CONVREP_OFFLINE)/go.tar.xz),)
GO := $(abspath $(CONVREP_OFFLINE))/go/bin/go
endif
endif

.PHONY: setup install lint test demo compare claims bench bench-compare bench-embed bench-serve fuzz

# Installs libtorch when missing and prepares third_party/gotch; returns at once when nothing changed.
setup:
ifneq ($(CONVREP_OFFLINE),)
	@test -x $(GO) || ! test -f $(CONVREP_OFFLINE)/go.tar.xz || tar -xJf $(CONVREP_OFFLINE)/go.tar.xz -C $(CONVREP_OFFLINE)
	$(GO) run -mod=mod ./cmd/setup
else
	$(GO) run ./cmd/setup
endif

# Puts one program on the PATH, convrep ($GOBIN, else $GOPATH/bin), whose subcommands are the programs of cmd/:
# convrep train, evaluate, embed, data, bench, claims, setup (convrep --help lists them).
install: setup
	$(GO) install ./cmd/convrep

# staticcheck at a pinned version, installed by go install into bin/ (which git ignores).
STATICCHECK_VERSION := v0.8.2

# The format and lint checks, which make test (CI) runs first: every Go file outside third_party/, vendor/ and
# dot-folders is as gofmt writes it, and staticcheck's default checks find nothing. Offline (CONVREP_OFFLINE),
# staticcheck runs only when the module cache already holds it.
lint: setup
	@unformatted=$$(find . \( -path ./third_party -o -path ./vendor -o -path './.*' \) -prune -o -name '*.go' -print | \
		xargs "$$($(GO) env GOROOT)/bin/gofmt" -l); \
	if [ -n "$$unformatted" ]; then echo "gofmt -l: not formatted (gofmt -w them):"; echo "$$unformatted"; exit 1; fi
ifneq ($(CONVREP_OFFLINE),)
	@if GOBIN=$(CURDIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); then bin/staticcheck ./...; \
	else echo "lint: staticcheck $(STATICCHECK_VERSION) is not in the module cache, and there is no network: not run"; fi
else
	GOBIN=$(CURDIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	bin/staticcheck ./...
endif

test: setup lint
	$(GO) vet ./...
	$(GO) test -timeout 20m ./...

# The demo trains DSE from the small pretrained BERT of ../shared/models/mini-bert-dialogue-mlm (200 steps of 64 pairs;
# 1 min 54 s on two cores on 2026-11-25; 4 min 55 s on 2026-11-27, when the commit before that day's changes, ca1c499,
# stepped at the same 1.4 s per step with the same losses: the machine, not the code).
demo: setup
	$(GO) run ./cmd/train --resume experiments/dse_mini_cpu.toml
	@echo "model: runs/dse_mini_cpu/model  metrics: runs/dse_mini_cpu/metrics.jsonl  loss curve: runs/dse_mini_cpu/loss.png  TensorBoard: runs/dse_mini_cpu/events.out.tfevents.* (tensorboard --logdir runs/)"

# The papers' similarity-based tables for the demo's model beside the mini BERT it started from (run make demo first;
# 3 min 6 s on two cores).
compare: setup
	$(GO) run ./cmd/evaluate suite --model $(SHARED)/models/mini-bert-dialogue-mlm --output-dir runs/eval/mini-bert-dialogue-mlm
	$(GO) run ./cmd/evaluate suite --model runs/dse_mini_cpu --output-dir runs/eval/dse_mini_cpu
	$(GO) run ./cmd/evaluate report --output runs/eval/report.md runs/eval/mini-bert-dialogue-mlm runs/eval/dse_mini_cpu
	@cat runs/eval/report.md

# The four papers' claims at small scale from the mini BERT: trains what is missing, evaluates, and writes
# runs/claims/report.md (scripts/claims.sh; resumable; 1 h 31 min on two cores, see README).
claims: setup
	scripts/claims.sh

bench: setup
	$(GO) test -run XXX -bench . -benchtime 20x ./models

# convrep's training step beside PyTorch eager's on this machine, two shapes, and the ratio (needs python3-torch).
bench-compare: setup
	scripts/bench_compare.sh

# Inference on the CPU beside ONNX Runtime (onnxruntime-node) and PyTorch eager, the mini BERT and a 12 x 768 BERT,
# 2 threads, under the benchmark lock (scripts/bench_embed.sh; needs node, npm and python3-torch; docs/measuring.md).
bench-embed: setup
	GO=$(GO) flock /tmp/convrep-bench.lock scripts/bench_embed.sh

# convrep serve under load beside offline embedding and PyTorch's inference, the mini BERT and a 12 x 768 BERT,
# 2 threads, under the benchmark lock (scripts/bench_serve.sh; needs python3-torch; docs/serving.md).
bench-serve: setup
	GO=$(GO) flock /tmp/convrep-bench.lock scripts/bench_serve.sh

# Every fuzz target, 60 s each (about 31 minutes): the parsers of every file, header, variable and flag convrep reads.
fuzz: setup
	$(GO) test -run XXX -fuzz '^FuzzHeader$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./safetensors
	$(GO) test -run XXX -fuzz '^FuzzParse$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./safetensors
	$(GO) test -run XXX -fuzz '^FuzzReadPickle$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./models/torchbin
	$(GO) test -run XXX -fuzz '^FuzzReadFile$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./models/torchbin
	$(GO) test -run XXX -fuzz '^FuzzParseConfig$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./models
	$(GO) test -run XXX -fuzz '^FuzzParseMeta$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./models/hub
	$(GO) test -run XXX -fuzz '^FuzzLoad$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./tokenizers
	$(GO) test -run XXX -fuzz '^FuzzEncode$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./tokenizers
	$(GO) test -run XXX -fuzz '^FuzzDecodeCache$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./datasets
	$(GO) test -run XXX -fuzz '^FuzzSGD$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./datasets
	$(GO) test -run XXX -fuzz '^FuzzMSR$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./datasets
	$(GO) test -run XXX -fuzz '^FuzzMetaLWOZ$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./datasets
	$(GO) test -run XXX -fuzz '^FuzzTaskmaster$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./datasets
	$(GO) test -run XXX -fuzz '^FuzzFrames$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./datasets
	$(GO) test -run XXX -fuzz '^FuzzKVRET$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./datasets
	$(GO) test -run XXX -fuzz '^FuzzCamRest$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./datasets
	$(GO) test -run XXX -fuzz '^FuzzWOZ$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./datasets
	$(GO) test -run XXX -fuzz '^FuzzFiles$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./datasets
	$(GO) test -run XXX -fuzz '^FuzzChatRecords$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./datasets
	$(GO) test -run XXX -fuzz '^FuzzChatScanner$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./datasets
	$(GO) test -run XXX -fuzz '^FuzzLoadExperiment$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./experiment
	$(GO) test -run XXX -fuzz '^FuzzRead$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./checkpoint
	$(GO) test -run XXX -fuzz '^FuzzReader$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./tensorboard
	$(GO) test -run XXX -fuzz '^FuzzLoadState$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./trainer/optim
	$(GO) test -run XXX -fuzz '^FuzzDistEnv$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./trainer
	$(GO) test -run XXX -fuzz '^FuzzReaders$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./evaluate/sets
	$(GO) test -run XXX -fuzz '^FuzzParsePyLiteral$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./evaluate/sets
	$(GO) test -run XXX -fuzz '^FuzzMSRIntentLabel$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./evaluate/sets
	$(GO) test -run XXX -fuzz '^FuzzReadTexts$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./cmd/internal/embedcmd
	$(GO) test -run XXX -fuzz '^FuzzDecodeRequest$$' -fuzzminimizetime 3s -fuzztime 60s -parallel 1 ./serve
