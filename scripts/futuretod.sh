#!/usr/bin/env bash
# FutureTOD ("FutureTOD: Teaching Future Knowledge to Pre-trained Language Model for Task-Oriented Dialogue"):
# pretrain BERT-base by distilling the future from a frozen, periodically refreshed teacher (plus MLM), then the
# paper's fine-tuning tables beside the untrained backbone: intent classification on CLINC150 with out-of-scope as
# class 151 (1-shot, 10-shot, full; Table 1), dialogue act prediction on DSTC2, GSIM and MultiWOZ (Table 3) and
# response selection on MultiWOZ after fine-tuning a dual encoder (Table 4). Fine-tuning follows the paper's
# App. B (`--protocol futuretod`: [CLS] pooling, its batch sizes and epochs).
#
# usage: scripts/futuretod.sh [--small] [--gpus N] [--all] [--out DIR] [--dry-run]
#   --small    experiments/futuretod_small_cpu.toml on CPU (a random 4-layer BERT): the similarity suite and one
#              short fine-tuning table (GSIM acts, 1 seed, 5 epochs)
#   --gpus N   train with N workers on N GPUs (cmd/train --nproc-per-node N); evaluation uses one GPU
#   --all      also the TOD-BERT baseline (experiments/todbert_rcl_bert_base.toml) in every table
#   --out DIR  where the tables go (default runs/repro/futuretod or runs/repro/futuretod_small)
# Resumable: run it again with the same options and it continues (training resumes from its newest checkpoint,
# finished steps are skipped). Needs bert-base-uncased in the HuggingFace cache, or the network to fetch it.
#
# Expected wall time
#   one GPU (an estimate, not measured): 42,509 dialogues x 20 epochs, sequences up to 512 tokens (about 200 on
#     average), a student forward and backward plus the teacher's forward per example: about 1.5e17 FLOPs, 0.5-2 h
#     of training on an H100-class GPU depending on padding; evaluation (10 seeds, up to 100 epochs with early
#     stopping, per table) about 3-6 h. --all adds a TOD-BERT run of similar size and its tables.
#   --small on CPU (a 2-core machine): training 9 min (545 s measured in runs/futuretod_small_cpu/metrics.jsonl),
#     two similarity suites about 13 min (measured for DSE's small model), the GSIM table not measured; about
#     25-35 min in all.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
parse_args "$@"
setup_bins

if [[ "$SMALL" == 1 ]]; then
	OUT="${OUT:-runs/repro/futuretod_small}"
	exp=experiments/futuretod_small_cpu.toml
	train_suites "$exp" untrained futuretod
	ev acts "$OUT/acts-untrained/acts-gsim.json" --model "$exp" --dataset gsim --shots 10 --seeds 0 --epochs 5 --protocol futuretod
	ev acts "$OUT/acts-futuretod/acts-gsim.json" --model "$(output_dir "$exp")" --dataset gsim --shots 10 --seeds 0 --epochs 5 --protocol futuretod
	ev report "$OUT/report.md" "$OUT/untrained" "$OUT/futuretod"
	ev report "$OUT/acts.md" "$OUT/acts-untrained" "$OUT/acts-futuretod"
	log "tables: $OUT/report.md, $OUT/acts.md"
	exit 0
fi

OUT="${OUT:-runs/repro/futuretod}"
exp=experiments/futuretod_bert_base.toml
train "$exp"
labels=(bert-base-uncased futuretod)
models=("$exp" "$(output_dir "$exp")")
if [[ "$ALL" == 1 ]]; then
	train experiments/todbert_rcl_bert_base.toml
	labels+=(todbert)
	models+=("$(output_dir experiments/todbert_rcl_bert_base.toml)")
fi

dirs=()
for i in "${!labels[@]}"; do
	d="$OUT/${labels[$i]}"
	m="${models[$i]}"
	ev finetune-intent "$d/finetune-intent-clinc150.json" --model "$m" --dataset clinc150 --shots 1,10 --full --protocol futuretod
	ev acts "$d/acts-dstc2.json" --model "$m" --dataset dstc2 --fractions 1 --protocol futuretod
	ev acts "$d/acts-gsim.json" --model "$m" --dataset gsim --fractions 1 --protocol futuretod
	ev acts "$d/acts-multiwoz.json" --model "$m" --dataset multiwoz --fractions 1 --protocol futuretod
	ev finetune-response "$d/finetune-response-multiwoz.json" --model "$m" --dataset multiwoz --protocol futuretod
	dirs+=("$d")
done
ev report "$OUT/report.md" "${dirs[@]}"
log "tables: $OUT/report.md"
