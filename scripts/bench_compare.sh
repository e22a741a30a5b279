#!/usr/bin/env bash
# Times convrep's training step (cmd/bench) beside PyTorch eager's (scripts/bench_pytorch.py) on this machine,
# the same DSE step with the same flags, and prints pairs/s of each and their ratio (convrep / PyTorch).
#
# Two shapes on CPU: one where per-op host overhead dominates (a tiny encoder, small batch) and one where the
# matmuls do. The runs alternate (convrep, PyTorch, convrep, ...) ROUNDS times per shape and the median of each
# is compared, so a burst of load elsewhere hits both alike. Measure on a quiet machine: the load average is
# printed before each shape.
#
# usage: scripts/bench_compare.sh [--rounds N] [--device cpu|cuda] [--threads N] [--blas-threads N]
#                                 [--precision fp32|bf16] [--keep-heap]
#
# --keep-heap sets GLIBC_TUNABLES for both sides so that glibc's malloc keeps freed blocks of up to 32 MiB in
# its heap (mmap_threshold) and never hands the heap's top back (trim_threshold). A training step allocates the
# same large tensors every time (PyTorch eager's AdamW update of a 30,522-row embedding makes several of 8 MB at
# hidden 64; both sides' embedding gradient is 31 MiB at hidden 256): by default glibc returns them to the
# kernel when freed, and every step faults their pages in again. convrep sets the same two values itself when
# it starts (internal/torch/heap.go), so the flag changes only PyTorch's side: with it both are measured
# without that cost; without it, as a user would run them. On 2026-11-26 the default cost PyTorch 7 times its
# speed on the overhead-bound shape here (97 against 512 pairs/s), and convrep, before it kept its heap, 14 %
# on the compute-bound one.
#
# Each side reports the kernel set OpenBLAS runs its matrix products with (blas_core): both read
# OPENBLAS_CORETYPE, so they should match. The development machine's environment sets OPENBLAS_CORETYPE=Haswell
# (AVX2) on a CPU where OpenBLAS would pick Cooperlake (AVX-512) itself; `env -u OPENBLAS_CORETYPE` lets it.
#
# The CPU ratio (PyTorch's process CPU time per step over convrep's) is steadier than the pairs/s one on a
# shared machine. --blas-threads sets OPENBLAS_NUM_THREADS for both: OpenBLAS's pthread build keeps its
# threads spinning between calls, which on a small busy machine costs both sides CPU time and adds noise.
#
#   BENCH_BIN=/path/to/bench   use this cmd/bench binary instead of building one
#   PYTHON=python3             the Python with torch (default: python3 if it has torch, else /usr/bin/python3;
#                              apt-get install python3-torch on Debian)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS=3
DEVICE=cpu
THREADS=0
PRECISION=fp32
BLAS_THREADS=""
PYTHON="${PYTHON:-}"

while (($#)); do
	case "$1" in
	--rounds) ROUNDS="${2:?--rounds needs a number}"; shift ;;
	--device) DEVICE="${2:?--device needs cpu, cuda or cuda:N}"; shift ;;
	--threads) THREADS="${2:?--threads needs a number}"; shift ;;
	--precision) PRECISION="${2:?--precision needs fp32 or bf16}"; shift ;;
	--blas-threads) BLAS_THREADS="${2:?--blas-threads needs a number}"; shift ;;
	--keep-heap) export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296 ;;
	-h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) echo "bench_compare.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

# shellcheck source=common.sh
source "$ROOT/scripts/common.sh"
python_with_torch || exit 1
BIN="${BENCH_BIN:-}"
if [[ -z "$BIN" ]]; then
	BIN="$(mktemp -d)/bench"
	(cd "$ROOT" && go build -o "$BIN" ./cmd/bench)
fi

# name, then the shape flags, then the timed steps: enough for about ten seconds per run on a 2-core CPU.
SHAPES=(
	"overhead-bound|--layers 2 --hidden 64 --heads 2 --batch 8 --seq 16|400"
	"compute-bound|--layers 4 --hidden 256 --heads 4 --batch 64 --seq 32|20"
)

if [[ -n "$BLAS_THREADS" ]]; then
	export OPENBLAS_NUM_THREADS="$BLAS_THREADS"
fi

for entry in "${SHAPES[@]}"; do
	IFS='|' read -r name shape steps <<<"$entry"
	# shellcheck disable=SC2206 # the shape is a list of flags
	args=($shape --steps "$steps" --warmup 5 --threads "$THREADS" --device "$DEVICE" --precision "$PRECISION")
	echo "== $name: $shape (steps $steps, OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-unset}, GLIBC_TUNABLES=${GLIBC_TUNABLES:-unset}, $(uptime | sed 's/.*load/load/'))"
	lines=()
	for ((r = 1; r <= ROUNDS; r++)); do
		lines+=("$("$BIN" "${args[@]}")")
		lines+=("$("$PYTHON" "$ROOT/scripts/bench_pytorch.py" "${args[@]}")")
	done
	printf '%s\n' "${lines[@]}" | "$PYTHON" -c '
import json, statistics, sys
runs = [json.loads(l) for l in sys.stdin if l.strip()]
med, cpu = {}, {}
for impl in ("convrep", "pytorch"):
    pairs = [r["pairs_per_s"] for r in runs if r["impl"] == impl]
    cpus = [r["cpu_s"] for r in runs if r["impl"] == impl]
    med[impl], cpu[impl] = statistics.median(pairs), statistics.median(cpus)
    kernels = "/".join(sorted({r.get("blas_core") or "not OpenBLAS" for r in runs if r["impl"] == impl}))
    print(f"{impl:8s} pairs/s median {med[impl]:9.1f}  runs {[round(p, 1) for p in pairs]}  cpu_s/step median {cpu[impl]:.4f}"
          f"  BLAS kernels {kernels}")
ratio, cpu_ratio = med["convrep"] / med["pytorch"], cpu["pytorch"] / cpu["convrep"]
print(f"ratio convrep/pytorch: pairs/s {ratio:.2f}, CPU time per step {cpu_ratio:.2f}")
'
done
