#!/usr/bin/env bash
# The four papers' central claims at small scale, from the small pretrained BERT of
# ../shared/models/mini-bert-dialogue-mlm, on this machine's CPU: trains what is missing, evaluates it, and writes
# runs/claims/report.md (cmd/claims report: per claim its table, the seeds, mean ± std, Cohen's d of every
# comparison against the seed spread, and a verdict). The claims and their comparisons are in
# scripts/claims.toml; the experiments are experiments/*_mini_cpu.toml (each says what was scaled and why).
#   dse          DSE Tables 2 and 4: DSE > SimCSE-dropout > the mini BERT on 1- and 5-shot intent classification
#                (CLINC150, SNIPS), AmazonQA response selection and out-of-scope detection (the authors' protocol)
#   futuretod    FutureTOD Table 3: FutureTOD > DSE and > TOD-BERT's MLM+RCL on dialogue act prediction by
#                fine-tuning (DSTC2 1% of train, GSIM few-shot) and on the frozen-encoder act probe (MultiWOZ)
#   dialoguecse  DialogueCSE Table 2: I2 >= I1, and DialogueCSE above its start, on semantic retrieval (§5.1.2)
#                built from MSR-E2E, which the DialogueCSE runs never train on
#   mgt          MGT Table 2: the granularity ensemble > the seeds ensemble > the single dual encoder on MultiWOZ
#                next-utterance retrieval (1 of 20), checkpoints chosen on MultiWOZ's validation split (§4.2)
#
# usage: scripts/claims.sh [CLAIM ...] [--ablations] [--out DIR] [--dry-run]
#   CLAIM        one or more of dse, futuretod, dialoguecse, mgt (default: all four, in that order)
#   --ablations  after each claim, its ablations (scripts/claims.toml's CLAIM-ablation* entries: one *_mini_cpu.toml
#                variant per failed comparison, seeds 1-2, laid beside the claim's own runs in the report)
#   --out DIR    where runs, results and the report go (default runs/claims)
# Resumable: run it again and it continues (training resumes from its newest checkpoint; finished trainings and
# evaluations are skipped). Each stage prints its number, the elapsed time and an ETA; DIR/CLAIM/stages.tsv keeps
# the seconds every stage ran, which the report sums into the claim's wall time.
#
# Wall time on this 2-core machine, measured from a fresh clone (make claims): see README "The papers' claims at
# small scale"; measured: DSE 21 min, FutureTOD 34 min, DialogueCSE 11 min, MGT 25 min, all four 1 h 31 min.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

CLAIMS=()
OUT=runs/claims
ABLATIONS=0
while (($#)); do
	case "$1" in
	dse | futuretod | dialoguecse | mgt) CLAIMS+=("$1") ;;
	all) CLAIMS+=(dse futuretod dialoguecse mgt) ;;
	--out) OUT="${2:?--out needs a folder}"; shift ;;
	--out=*) OUT="${1#*=}" ;;
	--dry-run) DRY=1 ;;
	--ablations) ABLATIONS=1 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "$(basename "$0"): unknown claim or argument $1 (claims: dse futuretod dialoguecse mgt)" >&2; exit 2 ;;
	esac
	shift
done
((${#CLAIMS[@]})) || CLAIMS=(dse futuretod dialoguecse mgt)
SMALL=1 DEVICE=cpu
SPEC=scripts/claims.toml
SEEDS=(1 2 3)  # training seeds of every trained model
setup_bins
run "$BIN/claims" check --spec "$SPEC"

# --- the plan: every claim's stages, in order -------------------------------------------------------------------
STAGE_CLAIM=() STAGE_NAME=() STAGE_CMD=()
stage() { # stage CLAIM NAME COMMAND...: one step of the plan
	local c="$1" n="$2"
	shift 2
	STAGE_CLAIM+=("$c") STAGE_NAME+=("$n") STAGE_CMD+=("$(printf '%q ' "$@")")
}
tdir() { printf '%s/%s/train/%s/s%s\n' "$OUT" "$1" "$2" "$3"; } # tdir CLAIM MODEL SEED: a training run
edir() { printf '%s/%s/eval/%s/s%s\n' "$OUT" "$1" "$2" "$3"; }  # edir CLAIM MODEL SEED: its results

# trained CLAIM MODEL EXPERIMENT [--set k=v ...]: the model trained with each seed into tdir.
trained() {
	local c="$1" m="$2" toml="$3" s
	shift 3
	for s in "${SEEDS[@]}"; do
		stage "$c" "train $m seed $s" train "$toml" --set "seed=$s" --set "output_dir=$(tdir "$c" "$m" "$s")" "$@"
	done
}

# DSE Tables 2-4 (§4.2-4.3): similarity-based, no fine-tuning; intent and OOS as DSE App. B (64 tokens),
# AmazonQA 1 of 100 (128 tokens); every task over 10 sampled splits or candidate draws.
dse_tasks() { # dse_tasks CLAIM MODEL SEED MODEL_PATH
	local d
	d="$(edir "$1" "$2" "$3")"
	stage "$1" "evaluate $2 seed $3" eval_dse "$d" "$4"
}
eval_dse() {
	ev intent "$1/intent-clinc150.json" --model "$2" --dataset clinc150 --quiet
	ev intent "$1/intent-snips.json" --model "$2" --dataset snips --quiet
	ev oos "$1/oos-clinc150.json" --model "$2" --dataset clinc150 --quiet
	ev response "$1/response-amazonqa.json" --model "$2" --dataset amazonqa --quiet
}
plan_dse() {
	local s
	trained dse dse experiments/dse_mini_cpu.toml
	trained dse simcse experiments/simcse_mini_cpu.toml
	dse_tasks dse backbone 0 "$MINI"
	for s in "${SEEDS[@]}"; do
		dse_tasks dse simcse "$s" "$(tdir dse simcse "$s")"
		dse_tasks dse dse "$s" "$(tdir dse dse "$s")"
	done
}

# The ablation of DSE's SNIPS 5-shot drop: DSE and SimCSE-dropout retrained with a checkpoint every 25 steps
# (seeds 1-2), SNIPS intent classification at steps 25, 50, 100 and 200 beside the start (step 0, the DSE claim's
# backbone row): at which step the drop starts, whether SimCSE shows it too, and whether DSE's head output (the
# space its loss compares, --head contrast_head) shows it.
TREND_STEPS=(25 50 100 200)
plan_dse_ablation() {
	local s m n c=dse-ablation SEEDS=("${ABLATION_SEEDS[@]}") every=(--set train.checkpoint_every=25 --set train.keep_checkpoints=8)
	trained "$c" dse experiments/dse_mini_cpu.toml "${every[@]}"
	trained "$c" simcse experiments/simcse_mini_cpu.toml "${every[@]}"
	for s in "${SEEDS[@]}"; do
		for m in dse simcse; do
			for n in "${TREND_STEPS[@]}"; do
				stage "$c" "evaluate $m at step $n seed $s" ev intent "$(edir "$c" "$m$n" "$s")/intent-snips.json" --model "$(tdir "$c" "$m" "$s")" \
					--checkpoint "$(printf '%s/checkpoints/step-%09d.safetensors' "$(tdir "$c" "$m" "$s")" "$n")" --dataset snips --quiet
			done
		done
		for n in "${TREND_STEPS[@]}"; do
			stage "$c" "evaluate dse's head at step $n seed $s" ev intent "$(edir "$c" "dse${n}head" "$s")/intent-snips.json" --model "$(tdir "$c" dse "$s")" \
				--checkpoint "$(printf '%s/checkpoints/step-%09d.safetensors' "$(tdir "$c" dse "$s")" "$n")" --head contrast_head --dataset snips --quiet
		done
	done
}

# FutureTOD Table 3 (§4.3): dialogue act prediction by fine-tuning (--protocol futuretod: batch 16, 50 epochs, rate
# 5e-5, no dropout; one fine-tuning seed per trained model) on DSTC2 with 1% of its training turns (Table 3's 1%
# setting) and on GSIM with 10 examples per act, and the frozen-encoder act probe (MGT §5.3, MultiWOZ). Inputs of
# 64 tokens (the protocol's "model's limit" would be the mini BERT's 128; 64 halves the cost). Its DSE rows are the
# DSE claim's runs (seeds 1 and 2).
FT_SEEDS=(1 2)
futuretod_tasks() { # futuretod_tasks MODEL SEED MODEL_PATH [CLAIM]
	local c="${4:-futuretod}"
	stage "$c" "evaluate $1 seed $2" eval_futuretod "$(edir "$c" "$1" "$2")" "$3"
}
eval_futuretod() {
	local ft=(--protocol futuretod --max-length 64 --seeds 0 --quiet)
	ev acts "$1/acts-dstc2.json" --model "$2" --dataset dstc2 --fractions 0.01 "${ft[@]}"
	ev acts "$1/acts-gsim.json" --model "$2" --dataset gsim --shots 10 "${ft[@]}"
	ev probe "$1/probe-acts.json" --model "$2" --dataset multiwoz --probe acts --max-length 64 --seeds 0 --quiet
}
plan_futuretod() {
	local s SEEDS=("${FT_SEEDS[@]}") # this claim's seeds, for trained too
	trained futuretod futuretod experiments/futuretod_mini_cpu.toml
	trained futuretod rcl experiments/todbert_rcl_mini_cpu.toml
	for s in "${SEEDS[@]}"; do # the DSE claim's runs (skipped when it has trained them)
		stage futuretod "train dse seed $s" train experiments/dse_mini_cpu.toml --set "seed=$s" --set "output_dir=$(tdir dse dse "$s")"
	done
	for s in "${SEEDS[@]}"; do
		futuretod_tasks futuretod "$s" "$(tdir futuretod futuretod "$s")"
		futuretod_tasks rcl "$s" "$(tdir futuretod rcl "$s")"
		futuretod_tasks dse "$s" "$(tdir dse dse "$s")"
	done
}

# The ablation of FutureTOD's failed comparisons (GSIM, the probe): the teacher keeping the student's whole context
# at 128 tokens, and the distillation term scaled to MLM's magnitude; seeds 1-2, evaluated as the claim's models.
ABLATION_SEEDS=(1 2)
plan_futuretod_ablation() {
	local s m c=futuretod-ablation SEEDS=("${ABLATION_SEEDS[@]}")
	trained "$c" ctx128 experiments/futuretod_ctx128_mini_cpu.toml
	trained "$c" w experiments/futuretod_w_mini_cpu.toml
	for s in "${SEEDS[@]}"; do
		for m in ctx128 w; do
			futuretod_tasks "$m" "$s" "$(tdir "$c" "$m" "$s")" "$c"
		done
	done
}

# DialogueCSE Table 2 (§5.1.2): semantic retrieval on MSR-E2E (evaluate sr: BM25's 100 candidates re-ranked by
# cosine, MAP and MRR, 3 samples of 2,000 queries); the DialogueCSE runs never see MSR-E2E.
plan_dialoguecse() {
	local m s
	trained dialoguecse i1 experiments/dialoguecse_i1_mini_cpu.toml
	trained dialoguecse i2 experiments/dialoguecse_i2_mini_cpu.toml
	stage dialoguecse "evaluate backbone" ev sr "$(edir dialoguecse backbone 0)/sr-msr_e2e.json" --model "$MINI" --quiet
	for s in "${SEEDS[@]}"; do
		for m in i1 i2; do
			stage dialoguecse "evaluate $m seed $s" ev sr "$(edir dialoguecse "$m" "$s")/sr-msr_e2e.json" --model "$(tdir dialoguecse "$m" "$s")" --quiet
		done
	done
}

# The ablation of DialogueCSE's small gains: I2 on MSR-E2E's own dialogues, and I2 with every layer trained.
plan_dialoguecse_ablation() {
	local s m c=dialoguecse-ablation SEEDS=("${ABLATION_SEEDS[@]}")
	trained "$c" msr experiments/dialoguecse_msr_mini_cpu.toml
	trained "$c" all experiments/dialoguecse_all_layers_mini_cpu.toml
	for s in "${SEEDS[@]}"; do
		for m in msr all; do
			stage "$c" "evaluate $m seed $s" ev sr "$(edir "$c" "$m" "$s")/sr-msr_e2e.json" --model "$(tdir "$c" "$m" "$s")" --quiet
		done
	done
}

# MGT Table 2 (§3.3, §4.2), the pipeline of scripts/mgt.sh from the mini BERT: the single dual encoder, the pool's
# segments from its response encoder, one dual encoder per granularity (L = 3), a seeds ensemble of 3 members
# (seeds 43-45); checkpoints chosen on MultiWOZ's validation split (Top-1 of 1 of 20); the four rows on MultiWOZ test,
# 1 of 20 over 10 candidate draws. One training run per row, as the paper's: the spread is the draws'.
MGT_L=3 MGT_MEMBERS=3
MGT_SEEDS=(42 43) # the training seeds of seed folders s1 (the experiments' own) and s2 of a granularity ensemble
mgt_dir() { printf '%s/mgt/train/%s\n' "$OUT" "$1"; }
# seed_sub N: the sub-folder of seed folder sN's granularities: none for seed 1 (where they always were), sN/ else
seed_sub() { (($1 == 1)) || printf 's%s/' "$1"; }
# gran_dir CLAIM N L: granularity L of seed folder sN
gran_dir() { printf '%s/%s/train/%sseg%s\n' "$OUT" "$1" "$(seed_sub "$2")" "$3"; }
# gran_select CLAIM N L: the checkpoint chosen on validation for gran_dir CLAIM N L
gran_select() { printf '%s/%s/select/%sseg%s.json\n' "$OUT" "$1" "$(seed_sub "$2")" "$3"; }
# granularities CLAIM SEEDS EXPERIMENT [--set k=v ...]: the L granularities trained with the first SEEDS of MGT_SEEDS.
granularities() {
	local c="$1" seeds="$2" exp="$3" n l
	shift 3
	for ((n = 1; n <= seeds; n++)); do
		for ((l = 1; l <= MGT_L; l++)); do
			stage "$c" "train granularity $l seed $n" train "$exp" "$@" --set "objective.segment=$l" \
				--set "seed=${MGT_SEEDS[n - 1]}" --set "output_dir=$(gran_dir "$c" "$n" "$l")"
		done
	done
}
plan_mgt() {
	local m single exp=experiments/mgt_mini_cpu.toml ens=experiments/mgt_ensemble_mini_cpu.toml
	single="$(mgt_dir single)"
	local enc=(--set "objective.segment_encoder=$single")
	stage mgt "train single" train experiments/mgt_single_mini_cpu.toml --set "output_dir=$single"
	stage mgt "segments" mgtbuckets "$exp" "${enc[@]}"
	granularities mgt 1 "$exp" "${enc[@]}"
	for ((m = 1; m <= MGT_MEMBERS; m++)); do
		stage mgt "train member $m" train "$ens" --set "objective.member=$m" --set "objective.models=$MGT_MEMBERS" --set "seed=$((42 + m))" --set "output_dir=$(mgt_dir "member$m")"
	done
	stage mgt "choose checkpoints on validation" mgt_select
	stage mgt "evaluate on test" mgt_test
}
MGT_LEN=(--max-length 64) # 64 tokens of history and response in selection and test (the paper: 128)
MGT_VAL=(--dataset multiwoz --split val --candidates 20 --metric top1 --quiet "${MGT_LEN[@]}")
MGT_TEST=(--dataset multiwoz --split test --candidates 20 --quiet "${MGT_LEN[@]}")
# select_granularities CLAIM SEEDS: each granularity run of each seed has its checkpoint chosen on validation.
select_granularities() {
	local n l
	for ((n = 1; n <= $2; n++)); do
		for ((l = 1; l <= MGT_L; l++)); do
			ev select "$(gran_select "$1" "$n" "$l")" --model "$(gran_dir "$1" "$n" "$l")" \
				--checkpoints "$(gran_dir "$1" "$n" "$l")" --top 1 "${MGT_VAL[@]}"
		done
	done
}
# test_granularities CLAIM SEEDS MODEL NAME: each seed's ensemble of CLAIM's granularities at their chosen
# checkpoints, on test, into edir CLAIM MODEL N.
test_granularities() {
	local n l best
	for ((n = 1; n <= $2; n++)); do
		best=""
		for ((l = 1; l <= MGT_L; l++)); do
			best+="${best:+,}$(chosen "$(gran_select "$1" "$n" "$l")")"
		done
		ev response "$(edir "$1" "$3" "$n")/response-multiwoz.json" --model "$(join_runs "$(gran_dir "$1" "$n" "")" "$MGT_L")" \
			--checkpoint "$best" --name "$4" "${MGT_TEST[@]}"
	done
}
mgt_select() {
	ev select "$OUT/mgt/select/single.json" --model "$(mgt_dir single)" --checkpoints "$(mgt_dir single)" --top 3 "${MGT_VAL[@]}"
	select_granularities mgt 1
}
mgt_test() {
	local single members
	single="$(mgt_dir single)" members="$(join_runs "$(mgt_dir member)" "$MGT_MEMBERS")"
	ev response "$(edir mgt single 1)/response-multiwoz.json" --model "$single" --checkpoint "$(chosen "$OUT/mgt/select/single.json" 1)" --name "Single dual encoder" "${MGT_TEST[@]}"
	ev response "$(edir mgt top 1)/response-multiwoz.json" --model "$single" --checkpoint "$(chosen "$OUT/mgt/select/single.json")" --name "Ensemble (3 checkpoints)" "${MGT_TEST[@]}"
	ev response "$(edir mgt seeds 1)/response-multiwoz.json" --model "$members" --name "Ensemble ($MGT_MEMBERS seeds)" "${MGT_TEST[@]}"
	test_granularities mgt 1 mgt "MGT ($MGT_L granularities)"
}

# The ablations of MGT < the seeds ensemble: the granularities trained with the gold response's near-duplicates
# left out of its negatives, on the MGT claim's segment encoder, with two seeds (the claim's own seed and the
# next); checkpoints chosen on validation and each seed's ensemble tested as the claim's. Two variants, each a claim
# of its own folder: the raw cosine ceiling (mgt_neardup_mini_cpu.toml: under the mini encoder only the
# normalised-text twins leave), and the ceiling on centred embeddings (mgt_neardup_centred_mini_cpu.toml).
plan_mgt_ablation() {
	local enc=(--set "objective.segment_encoder=$(mgt_dir single)")
	neardup_ablation mgt-ablation experiments/mgt_neardup_mini_cpu.toml neardup "MGT without near-duplicate negatives" "${enc[@]}"
	neardup_ablation mgt-ablation-centred experiments/mgt_neardup_centred_mini_cpu.toml centred \
		"MGT without near-duplicate negatives (centred ceiling)" "${enc[@]}"
}
# neardup_ablation CLAIM EXPERIMENT MODEL NAME [--set k=v ...]: one variant's stages.
neardup_ablation() {
	local c="$1" exp="$2" model="$3" name="$4"
	shift 4
	stage "$c" "segments without near-duplicates" mgtbuckets "$exp" "$@"
	granularities "$c" 2 "$exp" "$@"
	stage "$c" "choose checkpoints on validation" select_granularities "$c" 2
	stage "$c" "evaluate on test" test_granularities "$c" 2 "$model" "$name"
}

MINI=../shared/models/mini-bert-dialogue-mlm
for c in "${CLAIMS[@]}"; do
	"plan_$c"
	if ((ABLATIONS)) && declare -F "plan_${c}_ablation" >/dev/null; then
		"plan_${c}_ablation"
	fi
done

# --- running the plan ---------------------------------------------------------------------------------------------
hms() { printf '%d:%02d:%02d' $(($1 / 3600)) $(($1 % 3600 / 60)) $(($1 % 60)); }
report() { run "$BIN/claims" report --spec "$SPEC" --runs "$OUT" --output "$OUT/report.md"; }
total=${#STAGE_NAME[@]} start=$SECONDS ran=0 ran_s=0
for ((i = 0; i < total; i++)); do
	c="${STAGE_CLAIM[i]}" name="${STAGE_NAME[i]}"
	elapsed=$((SECONDS - start)) eta=unknown
	if ((ran > 0)); then
		eta="$(hms $((ran_s * (total - i) / ran)))"
	fi
	log "[$((i + 1))/$total] $c: $name (elapsed $(hms "$elapsed"), ETA $eta)"
	t0=$SECONDS
	eval "${STAGE_CMD[i]}"
	dt=$((SECONDS - t0))
	if ((dt > 1)) && [[ "$DRY" == 0 ]]; then
		# A stage that found its results already there takes no time and is not counted.
		mkdir -p "$OUT/$c"
		printf '%s\t%d\tdone\n' "$name" "$dt" >>"$OUT/$c/stages.tsv"
		ran=$((ran + 1)) ran_s=$((ran_s + dt))
	fi
	if ((i + 1 == total)) || [[ "${STAGE_CLAIM[i + 1]}" != "$c" ]]; then
		report
	fi
done
log "all stages done in $(hms $((SECONDS - start))); the report: $OUT/report.md"
