# The two commands a newcomer runs are `make demo` and `make test`; both run the set-up first when needed.
GO ?= go
SHARED ?= ../shared

.PHONY: setup test demo bench fuzz

# Installs libtorch when missing and prepares third_party/gotch; returns at once when nothing changed.
setup:
	$(GO) run ./cmd/setup

test: setup
	$(GO) vet ./...
	$(GO) test -timeout 20m ./...

# Until training lands, the demo embeds sample dialogue turns with the tiny fixture BERT.
demo: setup
	$(GO) run ./cmd/embed --model $(SHARED)/fixtures/tiny-bert --pooling mean --max-length 32 \
		--input cmd/embed/testdata/sample_turns.txt --output runs/demo/embeddings.jsonl
	@echo "embeddings written to runs/demo/embeddings.jsonl"

bench: setup
	$(GO) test -run XXX -bench . -benchtime 20x ./models

fuzz: setup
	$(GO) test -run XXX -fuzz FuzzHeader -fuzzminimizetime 3s -fuzztime 60s ./models/safetensors
	$(GO) test -run XXX -fuzz FuzzReadPickle -fuzzminimizetime 3s -fuzztime 60s ./models/torchbin
	$(GO) test -run XXX -fuzz FuzzDecodeCache -fuzzminimizetime 3s -fuzztime 60s ./datasets
