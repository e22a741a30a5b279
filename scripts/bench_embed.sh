#!/usr/bin/env bash
# Inference on the CPU, side by side in one run: ONNX Runtime (npm's onnxruntime-node), PyTorch eager
# (scripts/bench_pytorch.py --infer) and convrep's models.Embedder in fp32 and bf16, on the same weights, the
# same token ids and the same length-sorted batches, with the same number of threads. It prints one JSON line
# per system and model, then a parity line per model (the largest difference of each system's vectors from
# PyTorch's, and bf16's lowest cosine to fp32's), and the table docs/measuring.md keeps.
#
# usage: scripts/bench_embed.sh [--threads N] [--rounds N] [--base-rounds N] [--passes N] [--texts N] [--batch N]
#                               [--out DIR]
#
# Models: the mini BERT in ../shared/models/mini-bert-dialogue-mlm (4 x 256), and a BERT of BERT-base's shape
# (12 x 768, random weights, seed 1) written next to it with the same tokenizer. Texts: the first --texts
# (2,048) utterances of WOZ 2.0's training dialogues, cut to 32 tokens, sorted by length (scripts/benchembed
# prepare); every system cuts batches of --batch (64) from that order. Each system warms up over every text
# once (every batch shape), then times --rounds rounds over all of them (--base-rounds for the 12 x 768 BERT,
# default 1) and reports the best round and the median. --passes runs every system that many times in turn
# (ONNX Runtime, PyTorch, convrep fp32, convrep bf16, again...), so that a burst of load elsewhere hits each
# alike, and the table takes each system's best round: on a shared machine the one least disturbed. Run it
# under the benchmark lock (make bench-embed does).
#
# Needs node and npm, and a Python with torch (default /usr/bin/python3: apt-get install python3-torch).
# onnxruntime-node is installed once into ORT_DIR (default ~/.cache/convrep/onnxruntime-node) with
# ONNXRUNTIME_NODE_INSTALL=skip: its post-install step downloads GPU libraries; the CPU library ships in the
# package.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
THREADS=2
ROUNDS=3
BASE_ROUNDS=1
PASSES=1
TEXTS=2048
BATCH=64
OUT=""
while [ $# -gt 0 ]; do
	case "$1" in
	--threads) THREADS="$2"; shift 2 ;;
	--rounds) ROUNDS="$2"; shift 2 ;;
	--base-rounds) BASE_ROUNDS="$2"; shift 2 ;;
	--passes) PASSES="$2"; shift 2 ;;
	--texts) TEXTS="$2"; shift 2 ;;
	--batch) BATCH="$2"; shift 2 ;;
	--out) OUT="$2"; shift 2 ;;
	-h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench_embed.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
PYTHON="${PYTHON:-/usr/bin/python3}"
ORT_DIR="${ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/convrep/onnxruntime-node}"
SHARED="${SHARED:-$ROOT/../shared}"
MINI="$SHARED/models/mini-bert-dialogue-mlm"
WOZ="$SHARED/data/pretrain/woz2/data/woz/woz_train_en.json"
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"

"$PYTHON" -c 'import torch' 2>/dev/null || { echo "bench_embed.sh: $PYTHON has no torch (apt-get install python3-torch)" >&2; exit 1; }
command -v node >/dev/null || { echo "bench_embed.sh: node is not installed" >&2; exit 1; }
if [ ! -d "$ORT_DIR/node_modules/onnxruntime-node" ]; then
	echo "installing onnxruntime-node into $ORT_DIR" >&2
	mkdir -p "$ORT_DIR"
	(cd "$ORT_DIR" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund onnxruntime-node >&2)
fi
(cd "$ROOT" && "${GO:-go}" build -o "$OUT/benchembed" ./scripts/benchembed)

echo "# $(date -u +%F), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
BASE="$OUT/bert-12x768"
[ -f "$BASE/model.safetensors" ] || "$OUT/benchembed" random --like "$MINI" --layers 12 --hidden 768 --heads 12 --ffn 3072 --out "$BASE"
"$OUT/benchembed" prepare --model "$MINI" --woz "$WOZ" --texts "$TEXTS" --max-length 32 --out "$OUT/ids.jsonl"

LINES="$OUT/results.jsonl"
: >"$LINES"
for spec in "mini-bert-4x256:$MINI:$ROUNDS" "bert-12x768:$BASE:$BASE_ROUNDS"; do
	IFS=: read -r name dir rounds <<<"$spec"
	common=(--batch "$BATCH" --threads "$THREADS" --rounds "$rounds" --ids "$OUT/ids.jsonl" --name "$name")
	"$PYTHON" "$ROOT/scripts/bench_pytorch.py" --infer --model "$dir" "${common[@]}" --onnx "$OUT/$name.onnx" \
		--vectors "$OUT/$name.pytorch.f32" | tee -a "$LINES"
	for pass in $(seq "$PASSES"); do
		[ "$pass" = 1 ] || "$PYTHON" "$ROOT/scripts/bench_pytorch.py" --infer --model "$dir" "${common[@]}" | tee -a "$LINES"
		node "$ROOT/scripts/bench_ort.mjs" --ort "$ORT_DIR" --onnx "$OUT/$name.onnx" "${common[@]}" \
			--vectors "$OUT/$name.ort.f32" | tee -a "$LINES"
		for p in fp32 bf16; do
			"$OUT/benchembed" time --model "$dir" --precision "$p" "${common[@]}" --vectors "$OUT/$name.convrep-$p.f32" | tee -a "$LINES"
		done
	done
	"$PYTHON" - "$OUT" "$name" "$LINES" <<'PY' | tee -a "$LINES"
import json, sys
import numpy as np
out, name, lines = sys.argv[1:]
hidden = [json.loads(l) for l in open(lines) if f'"model": "{name}"' in l and '"pytorch' in l][0]["hidden"]
vec = lambda s: np.fromfile(f"{out}/{name}.{s}.f32", dtype="<f4").reshape(-1, hidden)
ref, fp, bf = vec("pytorch"), vec("convrep-fp32"), vec("convrep-bf16")
line = {"parity": name, "vectors": len(ref)}
for s in ["ort", "convrep-fp32", "convrep-bf16"]:
    line[s + "_max_abs_diff_from_pytorch"] = float(np.abs(vec(s) - ref).max())
cos = (fp * bf).sum(1) / np.sqrt((fp * fp).sum(1) * (bf * bf).sum(1))
line["bf16_min_cosine_to_fp32"] = float(cos.min())
print(json.dumps(line))
PY
done

"$PYTHON" - "$LINES" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
models = list(dict.fromkeys(r["model"] for r in rows if "system" in r))
print("\n| model | ONNX Runtime fp32 | PyTorch eager fp32 | convrep fp32 | convrep bf16 | fp32 / ORT | bf16 / ORT |")
print("|---|---|---|---|---|---|---|")
for m in models:
    t = {}
    for r in rows:
        if r.get("model") == m:
            t[r["system"]] = max(t.get(r["system"], 0), r["texts_per_s"])  # the best over passes
    ort = t["onnxruntime fp32"]
    print(f"| {m} | {ort:,.0f} | {t['pytorch fp32']:,.0f} | {t['convrep fp32']:,.0f} | {t['convrep bf16']:,.0f} "
          f"| {t['convrep fp32'] / ort:.2f}x | {t['convrep bf16'] / ort:.2f}x |")
PY
