#!/usr/bin/env bash
# MGT (Mehri and Eskenazi 2019, "Multi-Granularity Representations of Dialog"): build the response pool and its
# L = 5 similarity segments (cmd/mgtbuckets), train one BERT-base dual encoder per segment (Table 2's MGT members)
# and the single dual encoder with uniform negatives, then for each model beside the untrained backbone:
# next-utterance retrieval on MultiWOZ (20 candidates) and Ubuntu IRC (10), and the linear probes of §5.2-5.3
# (bag-of-words of the last utterance, next system acts) on frozen representations.
# The ensemble's combined score (Eq. 7, mgt.EnsembleProbabilities (objectives/mgt)) is not a cmd/evaluate task: each member
# is evaluated on its own.
#
# usage: scripts/mgt.sh [--small] [--gpus N] [--all] [--out DIR] [--dry-run]
#   --small    experiments/mgt_small_cpu.toml on CPU (a random 4-layer BERT, segment 1 only); probes with 1 seed,
#              5 epochs
#   --gpus N   train with N workers on N GPUs (cmd/train --nproc-per-node N); evaluation uses one GPU
#   --all      also the plain ensemble of Table 2 (experiments/mgt_ensemble_bert_base.toml, members 1-5)
#   --out DIR  where the tables go (default runs/repro/mgt or runs/repro/mgt_small)
# Resumable: run it again with the same options and it continues (training resumes from its newest checkpoint,
# finished steps are skipped). Needs bert-base-uncased in the HuggingFace cache, or the network to fetch it.
#
# Expected wall time
#   one GPU (an estimate, not measured): about 250,000 contexts (system responses of the 8 corpora) x 20 epochs,
#     each a context of up to 128 tokens and 20 candidate responses through the dual encoder: about 1.8e18 FLOPs,
#     3-4 h per member on an H100-class GPU; 6 members (5 segments and the single encoder) about 20 h, --all
#     (5 more) about 37 h; evaluation (retrieval and probes, 7 models) 1-3 h.
#   --small on CPU (a 2-core machine): training 16 min (984 s measured in runs/mgt_small_cpu/metrics.jsonl); the
#     response pool, retrieval and probes not measured, estimated 10-20 min; about 30-40 min in all.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
parse_args "$@"
setup_bins

# evaluate_mgt DIR MODEL [flags for the probes]: the retrieval and probe tables of one model.
evaluate_mgt() {
	local d="$1" m="$2"
	shift 2
	ev response "$d/response-multiwoz.json" --model "$m" --dataset multiwoz --candidates 20
	ev response "$d/response-ubuntu.json" --model "$m" --dataset ubuntu --candidates 10
	ev probe "$d/probe-bow.json" --model "$m" --dataset multiwoz --probe bow "$@"
	ev probe "$d/probe-acts.json" --model "$m" --dataset multiwoz --probe acts "$@"
}

if [[ "$SMALL" == 1 ]]; then
	OUT="${OUT:-runs/repro/mgt_small}"
	exp=experiments/mgt_small_cpu.toml
	mgtbuckets "$exp"
	train "$exp"
	evaluate_mgt "$OUT/untrained" "$exp" --seeds 0 --epochs 5
	evaluate_mgt "$OUT/mgt-seg1" "$(output_dir "$exp")" --seeds 0 --epochs 5
	ev report "$OUT/report.md" "$OUT/untrained" "$OUT/mgt-seg1"
	log "tables: $OUT/report.md"
	exit 0
fi

OUT="${OUT:-runs/repro/mgt}"
exp=experiments/mgt_bert_base.toml
mgtbuckets "$exp"
dirs=("$OUT/bert-base-uncased")
evaluate_mgt "$OUT/bert-base-uncased" "$exp"
for l in 1 2 3 4 5; do
	train "$exp" --set "objective.segment=$l" --set "output_dir=runs/mgt_bert_base/seg$l"
	evaluate_mgt "$OUT/mgt-seg$l" "runs/mgt_bert_base/seg$l"
	dirs+=("$OUT/mgt-seg$l")
done
single=experiments/mgt_single_bert_base.toml
train "$single"
evaluate_mgt "$OUT/single" "$(output_dir "$single")"
dirs+=("$OUT/single")
if [[ "$ALL" == 1 ]]; then
	ens=experiments/mgt_ensemble_bert_base.toml
	for l in 1 2 3 4 5; do
		train "$ens" --set "objective.member=$l" --set "seed=$((41 + l))" --set "output_dir=runs/mgt_ensemble_bert_base/m$l"
		evaluate_mgt "$OUT/ensemble-m$l" "runs/mgt_ensemble_bert_base/m$l"
		dirs+=("$OUT/ensemble-m$l")
	done
fi
ev report "$OUT/report.md" "${dirs[@]}"
log "tables: $OUT/report.md"
