#!/usr/bin/env bash
# DSE (Zhou et al. 2022, "Learning Dialogue Representations from Consecutive Utterances"): pretrain BERT-base on
# consecutive-utterance pairs, then the paper's similarity-based tables (intent classification on CLINC150 and
# SNIPS, out-of-scope detection, response selection on AmazonQA, Ubuntu IRC and MultiWOZ) for the trained model
# beside its untrained backbone, the dialogue-act tables (fine-tuning, Appendix B) and Figure 1's t-SNE.
#
# usage: scripts/dse.sh [--small] [--gpus N] [--all] [--out DIR] [--dry-run]
#   --small    experiments/dse_small_cpu.toml on CPU (a random 4-layer BERT), similarity tables only
#   --gpus N   train with N workers on N GPUs (cmd/train --nproc-per-node N); evaluation uses one GPU
#   --all      also the paper's ablations and other backbones (dse2_1, dse3_1, dse123_1, dropout, RoBERTa,
#              DistilBERT, BERT-large), each with the similarity tables
#   --out DIR  where the tables go (default runs/repro/dse or runs/repro/dse_small); runs go to each
#              experiment's output_dir under runs/
# Resumable: run it again with the same options and it continues (training resumes from its newest checkpoint,
# finished steps are skipped). Needs bert-base-uncased in the HuggingFace cache, or the network to fetch it.
#
# Expected wall time
#   one GPU (an estimate, not measured): 710,770 pairs x 15 epochs = 10.7M pairs of 32-token sides; at the
#     5,000 pairs/s convrep aims for on an H100 that is about 36 min of training (1.5 h at 2,000 pairs/s), plus
#     about 1-2 h of evaluation (two similarity suites of minutes each; act fine-tuning, 10 seeds, 100 epochs with
#     early stopping). --all adds about 8 more BERT-base-sized runs (BERT-large about 3x one).
#   --small on CPU (measured on a 2-core machine): training 15 min (914 s in runs/dse_small_cpu/metrics.jsonl),
#     each similarity suite about 6.5 min (two: untrained and trained); about 30 min in all.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
parse_args "$@"
setup_bins

if [[ "$SMALL" == 1 ]]; then
	OUT="${OUT:-runs/repro/dse_small}"
	train_suites experiments/dse_small_cpu.toml untrained dse
	ev report "$OUT/report.md" "$OUT/untrained" "$OUT/dse"
	log "tables: $OUT/report.md"
	exit 0
fi

OUT="${OUT:-runs/repro/dse}"
exp=experiments/dse_bert_base.toml
train_suites "$exp" bert-base-uncased dse
models=("$OUT/bert-base-uncased" "$OUT/dse")

if [[ "$ALL" == 1 ]]; then
	for v in dse2_1_bert_base dse3_1_bert_base dse123_1_bert_base dse_dropout_bert_base dse_roberta_base dse_distilbert_base dse_bert_large; do
		train "experiments/$v.toml"
		ev suite "$OUT/$v" --model "$(output_dir "experiments/$v.toml")"
		models+=("$OUT/$v")
	done
fi
ev report "$OUT/similarity.md" "${models[@]}"

# Dialogue act prediction by fine-tuning (Appendix B), the untrained backbone beside DSE.
for m in bert-base-uncased dse; do
	model="$exp"
	[[ "$m" == dse ]] && model="$(output_dir "$exp")"
	ev acts "$OUT/acts-$m/acts-dstc2.json" --model "$model" --dataset dstc2 --shots 10,20
	ev acts "$OUT/acts-$m/acts-gsim.json" --model "$model" --dataset gsim --shots 10,20
	ev acts "$OUT/acts-$m/acts-multiwoz.json" --model "$model" --dataset multiwoz --fractions 0.01,0.1,1
done
ev report "$OUT/acts.md" "$OUT/acts-bert-base-uncased" "$OUT/acts-dse"
ev tsne "$OUT/tsne-dse.png" --model "$(output_dir "$exp")"
log "tables: $OUT/similarity.md, $OUT/acts.md; figure: $OUT/tsne-dse.png"
