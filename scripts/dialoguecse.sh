#!/usr/bin/env bash
# DialogueCSE ("DialogueCSE: Dialogue-based Contrastive Learning of Sentence Embeddings"): continue BERT-base's MLM
# on the dialogues (§5.1.1), then train the matching-guided contrastive objective from that model, and lay out the
# similarity-based tables (intent classification, out-of-scope detection, response selection) for the backbone,
# the MLM stage and DialogueCSE side by side. The paper's own test sets (semantic retrieval and D-STS built from
# JDDC, ECD and MDC) are not public in a reusable form; these are the closest evaluations convrep runs.
#
# usage: scripts/dialoguecse.sh [--small] [--gpus N] [--out DIR] [--dry-run]
#   --small    experiments/dse_small_cpu.toml then dialoguecse_small_cpu.toml on CPU: a small random encoder
#              needs DSE's training before DialogueCSE can learn (continued MLM leaves its token rows parallel;
#              the comment of dialoguecse_small_cpu.toml has the measurements)
#   --gpus N   train with N workers on N GPUs (cmd/train --nproc-per-node N); evaluation uses one GPU
#   --out DIR  where the tables go (default runs/repro/dialoguecse or runs/repro/dialoguecse_small)
# Resumable: run it again with the same options and it continues (training resumes from its newest checkpoint,
# finished steps are skipped). Needs bert-base-uncased in the HuggingFace cache, or the network to fetch it.
#
# Expected wall time
#   one GPU (an estimate, not measured): the MLM stage is 100 steps of 50 dialogues (a minute or two); one epoch
#     of DialogueCSE over MSR-E2E's responses (batch 20, each with 9 negatives and 3 context turns a side, 50
#     tokens) is a few thousand steps, 15-45 min; three similarity suites about 20-40 min.
#   --small on CPU (a 2-core machine): training 22 min (914 s and 423 s measured in runs/dse_small_cpu and
#     runs/dialoguecse_small_cpu metrics.jsonl), three similarity suites about 20 min; about 45 min in all.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
parse_args "$@"
setup_bins

if [[ "$SMALL" == 1 ]]; then
	OUT="${OUT:-runs/repro/dialoguecse_small}"
	first=experiments/dse_small_cpu.toml stage=dse
	cse=experiments/dialoguecse_small_cpu.toml
else
	OUT="${OUT:-runs/repro/dialoguecse}"
	first=experiments/dialoguecse_mlm_bert_base.toml stage=mlm
	cse=experiments/dialoguecse_bert_base.toml
fi
# The second stage's backbone is the first stage's model folder.
train "$first"
train "$cse"
ev suite "$OUT/backbone" --model "$first"
ev suite "$OUT/$stage" --model "$(output_dir "$first")"
ev suite "$OUT/dialoguecse" --model "$(output_dir "$cse")"
ev report "$OUT/report.md" "$OUT/backbone" "$OUT/$stage" "$OUT/dialoguecse"
log "tables: $OUT/report.md"
