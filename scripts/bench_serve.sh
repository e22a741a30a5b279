#!/usr/bin/env bash
# convrep serve under load, beside offline embedding and PyTorch, in one run on this machine (docs/serving.md
# keeps its table). For the mini BERT (../shared/models/mini-bert-dialogue-mlm, 4 x 256) and a BERT of
# BERT-base's shape (12 x 768, random weights, the mini BERT's tokenizer; scripts/benchembed random):
#   1. `convrep bench serve`: offline embedding of the texts (models.Embedder.EmbedAll, convrep embed's path,
#      batches of 64 sorted by length), one forward pass of one short text, then closed-loop clients on
#      /v1/embeddings at concurrency 1, 8 and 64 with 1 and 32 inputs per request, short inputs (WOZ 2.0
#      utterances, about 12 tokens) and long ones (96-word runs of them, about 128 tokens);
#   2. scripts/bench_pytorch.py --infer on the same token ids (torch.inference_mode, batches of 64 sorted by
#      length, as sentence-transformers' encode runs them), same model shape and weights, same threads.
# It prints the JSON lines and then the table, with the issue's targets checked: at concurrency 64 with 32
# inputs per request, at least 0.9x offline embedding's inputs/s and 1.0x PyTorch's; at concurrency 1 with one
# short input, a p50 of at most one forward pass + 2 ms; no errors anywhere.
#
# usage: scripts/bench_serve.sh [--threads N] [--duration D] [--base-duration D] [--out DIR]
#   --threads N         libtorch threads for convrep and PyTorch (default 2)
#   --duration D        each cell's timed window for the mini BERT (default 10s; 3s warm-up before it)
#   --base-duration D   the same for the 12 x 768 BERT (default 30s; 10s warm-up), whose offline rows and
#                       PyTorch rounds use 256 texts of each length instead of 2,048
#   --out DIR           where the JSON lines, token ids and the random model go (default: a new temporary folder)
# Needs a Python with torch (default /usr/bin/python3: apt-get install python3-torch). Run it on a quiet
# machine: make bench-serve runs it under the benchmark lock.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
THREADS=2
DURATION=10s
BASE_DURATION=30s
OUT=""
while [ $# -gt 0 ]; do
	case "$1" in
	--threads) THREADS="$2"; shift 2 ;;
	--duration) DURATION="$2"; shift 2 ;;
	--base-duration) BASE_DURATION="$2"; shift 2 ;;
	--out) OUT="$2"; shift 2 ;;
	-h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) echo "bench_serve.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
PYTHON="${PYTHON:-/usr/bin/python3}"
SHARED="${CONVREP_SHARED:-$ROOT/../shared}"
MINI="$SHARED/models/mini-bert-dialogue-mlm"
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

"$PYTHON" -c 'import torch' 2>/dev/null || { echo "bench_serve.sh: $PYTHON has no torch (apt-get install python3-torch)" >&2; exit 1; }
(cd "$ROOT" && "${GO:-go}" build -o "$OUT/convrep" ./cmd/convrep && "${GO:-go}" build -o "$OUT/benchembed" ./scripts/benchembed)
BASE="$OUT/bert-12x768"
[ -f "$BASE/model.safetensors" ] || "$OUT/benchembed" random --like "$MINI" --layers 12 --hidden 768 --heads 12 --ffn 3072 --out "$BASE"

echo "# $(date -u '+%F %H:%M') UTC, $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg), commit $(cd "$ROOT" && git rev-parse --short HEAD)" >&2
LINES="$OUT/results.jsonl"
: >"$LINES"
for spec in "mini-bert-4x256:$MINI:2048:$DURATION:3s:3" "bert-12x768:$BASE:256:$BASE_DURATION:10s:1"; do
	IFS=: read -r name dir texts duration warmup rounds <<<"$spec"
	"$OUT/convrep" bench serve --model "$dir" --threads "$THREADS" --data "$SHARED/data/pretrain" --texts "$texts" \
		--duration "$duration" --warmup "$warmup" --write-ids "$OUT/ids-$name" 2>"$OUT/$name.serve.log" |
		sed "s/^{/{\"model\":\"$name\",/" | tee -a "$LINES"
	for length in short long; do
		"$PYTHON" "$ROOT/scripts/bench_pytorch.py" --infer --model "$dir" --ids "$OUT/ids-$name/$length.jsonl" \
			--batch 64 --threads "$THREADS" --rounds "$rounds" --name "$name" |
			sed "s/^{/{\"kind\":\"pytorch\",\"length\":\"$length\",/" | tee -a "$LINES"
	done
done

"$PYTHON" - "$LINES" <<'PY'
import json, sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
fails = []
for model in dict.fromkeys(r["model"] for r in rows):
    mine = [r for r in rows if r["model"] == model]
    offline = {r["length"]: r for r in mine if r["kind"] == "offline"}
    torch = {r["length"]: r for r in mine if r["kind"] == "pytorch"}
    print(f"\n{model}\n")
    print("| clients | inputs/request | length | requests/s | inputs/s | tokens/s | p50 ms | p90 ms | p99 ms | errors | vs offline | vs PyTorch |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in (r for r in mine if r["kind"] == "serve"):
        off, pt = offline[r["length"]]["inputs_per_s"], torch[r["length"]]["texts_per_s"]
        ms = lambda v: "-" if v is None else f"{v:.1f}"
        print(f"| {r['concurrency']} | {r['inputs_per_request']} | {r['length']} | {r['requests_per_s']:.1f} | {r['inputs_per_s']:.1f} | "
              f"{r['tokens_per_s']:.0f} | {ms(r['p50_ms'])} | {ms(r['p90_ms'])} | {ms(r['p99_ms'])} | {r['errors']} | "
              f"{r['inputs_per_s'] / off:.2f}x | {r['inputs_per_s'] / pt:.2f}x |")
        if r["errors"]:
            fails.append(f"{model} {r['concurrency']}x{r['inputs_per_request']} {r['length']}: {r['errors']} errors")
        if r["concurrency"] == 64 and r["inputs_per_request"] == 32:
            if r["inputs_per_s"] < 0.9 * off:
                fails.append(f"{model} 64x32 {r['length']}: {r['inputs_per_s'] / off:.2f}x offline, needs 0.9x")
            if r["inputs_per_s"] < pt:
                fails.append(f"{model} 64x32 {r['length']}: {r['inputs_per_s'] / pt:.2f}x PyTorch, needs 1.0x")
        if r["concurrency"] == 1 and r["inputs_per_request"] == 1 and r["length"] == "short":
            bound = offline["short"]["forward_one_ms"] + 2
            if r["p50_ms"] is None or r["p50_ms"] > bound:
                fails.append(f"{model} 1x1 short: p50 {r['p50_ms']} ms, needs at most {bound:.1f} (one forward pass + 2 ms)")
    print("\n| offline | texts | inputs/s | tokens/s | one forward pass, ms | PyTorch texts/s (best of rounds) |")
    print("|---|---|---|---|---|---|")
    for length, r in offline.items():
        print(f"| {length} | {r['texts']} | {r['inputs_per_s']:.1f} | {r['tokens_per_s']:.0f} | {r['forward_one_ms']:.1f} | {torch[length]['texts_per_s']:.1f} |")
print("\ntargets: " + ("all met" if not fails else "not met: " + "; ".join(fails)))
PY
echo "JSON lines: $LINES" >&2
