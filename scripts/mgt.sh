#!/usr/bin/env bash
# MGT (Mehri and Eskenazi 2019, "Multi-Granularity Representations of Dialog"), Table 2 on MultiWOZ next-utterance
# retrieval (1 of 20), as the paper runs it (§3.3, §4.2.3):
#   1. train the single dual encoder (uniform negatives, §3.1);
#   2. embed the response pool with its response encoder and cut it into L similarity segments (cmd/data prepare;
#      the experiment's objective.segment_encoder names the single run);
#   3. train one dual encoder per granularity (segment l's negatives, Eq. 9-12);
#   4. train the plain ensemble, one member per seed (uniform negatives, §3.2; seeds 43.., none the single run's 42);
#   5. choose checkpoints on MultiWOZ's validation split, never on test (§4.2: "the highest performing checkpoint
#      at each granularity is selected using the validation score. For the ensemble method, the top performing
#      checkpoints are selected from a single run"; cmd/evaluate select, 1 of 20, Top-1): each granularity's best
#      checkpoint, and the single run's top N (its best is the single dual encoder);
#   6. evaluate on MultiWOZ test the single dual encoder, "Ensemble (N)" (the single run's top N checkpoints), the
#      seeds ensemble and the MGT ensemble (Eq. 7; every member scores by cᵀr with its two encoders, Eq. 4) and
#      write Table 2's four rows to DIR/table2.md (the choices: DIR/select/*.json, ranked, with every score).
# Without --small it also evaluates the untrained backbone and the single dual encoder on Ubuntu IRC (10
# candidates) and with the linear probes of §5.2-5.3 (bag-of-words, next system acts).
#
# usage: scripts/mgt.sh [--small] [--gpus N] [--all] [--out DIR] [--dry-run]
#   --small    the *_small_cpu.toml experiments on CPU: a random 2-layer BERT, L = 3 granularities, 2 seeds,
#              200 steps per run, 5 checkpoints per run to choose from, "Ensemble (3)" (the files say what was scaled)
#   --gpus N   train with N workers on N GPUs (cmd/train --nproc-per-node N); evaluation uses one GPU
#   --all      also Ubuntu IRC retrieval and the probes for every granularity and seed member
#   --out DIR  where the tables go (default runs/repro/mgt or runs/repro/mgt_small)
# Resumable: run it again with the same options and it continues (training resumes from its newest checkpoint,
# finished steps are skipped). Needs bert-base-uncased in the HuggingFace cache, or the network to fetch it.
#
# Expected wall time
#   one GPU (an estimate, not measured): about 250,000 contexts (system responses of the 8 corpora) x 20 epochs,
#     each a context of up to 128 tokens and 20 candidate responses through the dual encoder: about 1.8e18 FLOPs,
#     3-4 h per run on an H100-class GPU; 11 runs (the single encoder, 5 granularities, 5 seeds) about 40 h;
#     evaluation 1-3 h; choosing checkpoints (20 per run, 6 runs, 7,365 validation queries each) about 30-60 min.
#   --small on CPU (this 2-core machine, otherwise idle), measured from scratch: 6 min 27 s in all; the single dual
#     encoder 43 s (200 steps), the segments 2 s, each of the 3 granularities and 2 seed members 35-40 s, the
#     selections on MultiWOZ val (5 checkpoints of the single run, 5 of each granularity) and the four Table 2 rows
#     on test about 2.5 min.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
parse_args "$@"
setup_bins

# evaluate_mgt DIR MODEL [flags for the probes]: Ubuntu IRC retrieval and the probe tables of one model.
evaluate_mgt() {
	local d="$1" m="$2"
	shift 2
	ev response "$d/response-ubuntu.json" --model "$m" --dataset ubuntu --candidates 10
	ev probe "$d/probe-bow.json" --model "$m" --dataset multiwoz --probe bow "$@"
	ev probe "$d/probe-acts.json" --model "$m" --dataset multiwoz --probe acts "$@"
}

if [[ "$SMALL" == 1 ]]; then
	OUT="${OUT:-runs/repro/mgt_small}"
	single=experiments/mgt_single_small_cpu.toml exp=experiments/mgt_small_cpu.toml ens=experiments/mgt_ensemble_small_cpu.toml
	L=3 SEEDS=2 # the files' objective.models
	TOP=3       # scaled: "Ensemble (5)" in Table 2; 3 of the single run's 5 checkpoints here
else
	OUT="${OUT:-runs/repro/mgt}"
	single=experiments/mgt_single_bert_base.toml exp=experiments/mgt_bert_base.toml ens=experiments/mgt_ensemble_bert_base.toml
	L=5 SEEDS=5
	TOP=5 # Table 2's "Ensemble (5)": the top 5 checkpoints of the single run (§4.2)
fi

# 1-2. The single dual encoder, then the segments from its response encoder.
train "$single"
mgtbuckets "$exp"
# 3. One run per granularity.
for ((l = 1; l <= L; l++)); do
	train "$exp" --set "objective.segment=$l" --set "output_dir=$(output_dir "$exp")/seg$l"
done
# 4. The seeds ensemble: seeds 43.. (the single dual encoder has 42, so member 1 is no copy of it).
for ((m = 1; m <= SEEDS; m++)); do
	train "$ens" --set "objective.member=$m" --set "seed=$((42 + m))" --set "output_dir=$(output_dir "$ens")/m$m"
done
# 5. Checkpoints chosen on MultiWOZ's validation split (§4.2), by Top-1 of 1 of 20, ties to the earlier step.
val=(--dataset multiwoz --split val --candidates 20 --metric top1)
single_run="$(output_dir "$single")"
ev select "$OUT/select/single.json" --model "$single_run" --checkpoints "$single_run" --top "$TOP" "${val[@]}"
for ((l = 1; l <= L; l++)); do
	run_l="$(output_dir "$exp")/seg$l"
	ev select "$OUT/select/seg$l.json" --model "$run_l" --checkpoints "$run_l" --top 1 "${val[@]}"
done
best_single="$(chosen "$OUT/select/single.json" 1)"
top_single="$(chosen "$OUT/select/single.json")"
best_segs=""
for ((l = 1; l <= L; l++)); do
	best_l="$(chosen "$OUT/select/seg$l.json")"
	best_segs+="${best_segs:+,}$best_l"
done
# 6. Table 2: MultiWOZ test, 1 of 20.
t2=(--dataset multiwoz --split test --candidates 20)
ev response "$OUT/table2/single.json" --model "$single_run" --checkpoint "$best_single" --name "Single dual encoder" "${t2[@]}"
ev response "$OUT/table2/ensemble-top.json" --model "$single_run" --checkpoint "$top_single" --name "Ensemble ($TOP)" "${t2[@]}"
ev response "$OUT/table2/ensemble.json" --model "$(join_runs "$(output_dir "$ens")/m" "$SEEDS")" --name "Ensemble ($SEEDS seeds)" "${t2[@]}"
ev response "$OUT/table2/mgt.json" --model "$(join_runs "$(output_dir "$exp")/seg" "$L")" --checkpoint "$best_segs" --name "MGT ($L granularities)" "${t2[@]}"
ev report "$OUT/table2.md" "$OUT/table2/single.json" "$OUT/table2/ensemble-top.json" "$OUT/table2/ensemble.json" "$OUT/table2/mgt.json"
log "Table 2: $OUT/table2.md"
if [[ "$SMALL" == 1 ]]; then
	exit 0
fi

dirs=("$OUT/bert-base-uncased" "$OUT/single")
evaluate_mgt "$OUT/bert-base-uncased" "$exp"
evaluate_mgt "$OUT/single" "$(output_dir "$single")"
if [[ "$ALL" == 1 ]]; then
	for ((l = 1; l <= L; l++)); do
		evaluate_mgt "$OUT/mgt-seg$l" "$(output_dir "$exp")/seg$l"
		dirs+=("$OUT/mgt-seg$l")
	done
	for ((m = 1; m <= SEEDS; m++)); do
		evaluate_mgt "$OUT/ensemble-m$m" "$(output_dir "$ens")/m$m"
		dirs+=("$OUT/ensemble-m$m")
	done
fi
ev report "$OUT/report.md" "${dirs[@]}"
log "tables: $OUT/report.md"
