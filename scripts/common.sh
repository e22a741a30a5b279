# Shared by the reproduction scripts (sourced, not run): options, the binaries, resumable training and evaluation.
# Every step is skipped when its result exists, and training always passes --resume, so a script stopped at any
# point (Ctrl-C, a lost machine) continues where it was when run again with the same options.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SMALL="${SMALL:-0}" # 1: the *_small_cpu.toml experiments on CPU
GPUS="${GPUS:-1}"   # >1: cmd/train starts one worker per GPU (--nproc-per-node)
ALL=0               # 1: also the ablations / extra models of the paper
DRY=0               # 1: print the commands, run nothing
OUT=""

usage() {
	# The script's header comment, without the shebang and the leading "# ".
	sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
}

parse_args() {
	while (($#)); do
		case "$1" in
		--small) SMALL=1 ;;
		--gpus) GPUS="${2:?--gpus needs a number}"; shift ;;
		--gpus=*) GPUS="${1#*=}" ;;
		--out) OUT="${2:?--out needs a folder}"; shift ;;
		--out=*) OUT="${1#*=}" ;;
		--all) ALL=1 ;;
		--dry-run) DRY=1 ;;
		-h | --help) usage; exit 0 ;;
		*) echo "$(basename "$0"): unknown argument $1" >&2; usage >&2; exit 2 ;;
		esac
		shift
	done
	if ! [[ "$GPUS" =~ ^[1-9][0-9]*$ ]]; then
		echo "$(basename "$0"): --gpus $GPUS is not a positive number" >&2
		exit 2
	fi
	if [[ "$SMALL" == 1 ]]; then
		DEVICE=cpu
		if ((GPUS > 1)); then
			echo "$(basename "$0"): --small runs on CPU; --gpus $GPUS does not apply" >&2
			exit 2
		fi
	else
		DEVICE=cuda
	fi
}

# setup_bins finds the commands: $CONVREP_BIN (the Docker image sets it), else builds them into bin/ after the
# set-up tool (which returns at once when nothing changed; LIBTORCH=... selects a CUDA libtorch).
setup_bins() {
	cd "$ROOT"
	if [[ -n "${CONVREP_BIN:-}" ]]; then
		BIN="$CONVREP_BIN"
		return
	fi
	BIN="$ROOT/bin"
	if [[ "$DRY" == 1 ]]; then
		return
	fi
	go run ./cmd/setup
	go build -o "$BIN/" ./cmd/train ./cmd/evaluate ./cmd/data ./cmd/claims
}

# python_with_torch sets PYTHON (unless set) to the first Python that imports torch, a virtual environment's,
# else the system's (Debian: apt-get install -y python3-torch); it fails saying so when there is none.
python_with_torch() {
	local p
	if [[ -z "${PYTHON:-}" ]]; then
		for p in python3 /usr/bin/python3; do
			if "$p" -c 'import torch' 2>/dev/null; then
				PYTHON="$p"
				break
			fi
		done
	fi
	if [[ -z "${PYTHON:-}" ]] || ! "$PYTHON" -c 'import torch' 2>/dev/null; then
		echo "$(basename "$0"): no python3 here imports torch (Debian: apt-get install -y python3-torch; or set PYTHON)" >&2
		return 1
	fi
}

log() { printf '%s [%s] %s\n' "$(date '+%H:%M:%S')" "$(basename "$0" .sh)" "$*" >&2; }

# run prints a command, then runs it (or only prints it with --dry-run).
run() {
	printf '+ %s\n' "$*"
	if [[ "$DRY" == 0 ]]; then
		"$@"
	fi
}

# output_dir is where an experiment writes, from the working directory: a --set output_dir=... among the
# arguments (the scripts write those from the working directory), else the file's output_dir (or runs/NAME),
# which convrep reads from the file's folder.
output_dir() {
	local toml="$1" a dir=""
	shift
	for a in "$@"; do
		[[ "$a" == output_dir=* ]] && dir="${a#output_dir=}"
	done
	if [[ -n "$dir" ]]; then
		printf '%s\n' "$dir"
		return
	fi
	dir="$(sed -n 's/^output_dir *= *"\(.*\)".*/\1/p' "$toml")"
	if [[ -z "$dir" ]]; then
		dir="runs/$(sed -n 's/^name *= *"\(.*\)".*/\1/p' "$toml")"
	fi
	case "$dir" in
	/*) printf '%s\n' "$dir" ;;
	*) realpath -m --relative-to=. -- "$(dirname "$toml")/$dir" ;;
	esac
}

# exp_args EXPERIMENT.toml [args...]: sets EXP_ARGS to args with the paths of --set output_dir=... and
# --set objective.segment_encoder=..., which the scripts write from the working directory, rewritten from the
# experiment file's folder: convrep reads every path of an experiment, --set ones too, from there.
exp_args() {
	local toml="$1" a key
	shift
	EXP_ARGS=()
	for a in "$@"; do
		for key in output_dir objective.segment_encoder; do
			if [[ "$a" == "$key="* && "${a#*=}" != /* && -n "${a#*=}" ]]; then
				a="$key=$(realpath -m --relative-to="$(dirname "$toml")" -- "${a#*=}")"
			fi
		done
		EXP_ARGS+=("$a")
	done
}

# train EXPERIMENT.toml [--set k=v ...]: trains, resuming from the newest checkpoint; skipped once the run has
# written its final model.
train() {
	local toml="$1"
	shift
	if [[ ! -f "$toml" ]]; then
		echo "$(basename "$0"): $toml does not exist" >&2
		exit 1
	fi
	local out
	out="$(output_dir "$toml" "$@")"
	if [[ "$DRY" == 0 && -f "$out/model/config.json" ]]; then
		log "done already: $out/model ($toml)"
		return
	fi
	local launch=("$BIN/train" --resume)
	if ((GPUS > 1)); then
		launch+=(--nproc-per-node "$GPUS")
	fi
	log "training $toml into $out"
	exp_args "$toml" "$@"
	run "${launch[@]}" "${EXP_ARGS[@]}" "$toml"
}

# mgtbuckets EXPERIMENT.toml [--set k=v ...]: builds (and caches) MGT's response pool and segments with data
# prepare, and reports their cost.
mgtbuckets() {
	local toml="$1"
	shift
	log "MGT response pool and segments for $toml"
	exp_args "$toml" "$@"
	run "$BIN/data" prepare "${EXP_ARGS[@]}" "$toml"
}

# ev TASK RESULT.json|DIR [flags]: one cmd/evaluate task; skipped when its result exists. suite takes a folder
# (done when DIR/suite.json exists), report a Markdown file (always rewritten), the others a JSON file.
ev() {
	local task="$1" dest="$2"
	shift 2
	local done="$dest"
	[[ "$task" == suite ]] && done="$dest/suite.json"
	# A report is cheap and reads whatever results exist: always redone.
	if [[ "$DRY" == 0 && "$task" != report && -f "$done" ]]; then
		log "done already: $done"
		return
	fi
	[[ "$DRY" == 1 ]] || mkdir -p "$(dirname "$done")"
	case "$task" in
	suite) run "$BIN/evaluate" suite --device "$DEVICE" --output-dir "$dest" "$@" ;;
	report) run "$BIN/evaluate" report --output "$dest" "$@" ;;
	*) run "$BIN/evaluate" "$task" --device "$DEVICE" --output "$dest" "$@" ;;
	esac
}

# train_suites EXP BEFORE AFTER: trains EXP, then the similarity suite of its untrained backbone into
# $OUT/BEFORE and of the trained model into $OUT/AFTER.
train_suites() {
	train "$1"
	ev suite "$OUT/$2" --model "$1"
	ev suite "$OUT/$3" --model "$(output_dir "$1")"
}

# chosen SELECTION.json [N]: the checkpoints evaluate select chose (all, or the best N), comma-separated, from the
# .txt it wrote beside the JSON; a placeholder under --dry-run, when nothing has been chosen.
chosen() {
	local txt="${1%.json}.txt"
	if [[ "$DRY" == 1 ]]; then
		printf '<chosen:%s>\n' "$txt"
		return
	fi
	if [[ ! -s "$txt" ]]; then
		echo "$(basename "$0"): $txt is missing: evaluate select did not finish" >&2
		return 1
	fi
	local line
	line="$(head -n 1 "$txt")"
	if [[ -n "${2:-}" ]]; then
		line="$(printf '%s\n' "$line" | cut -d, -f "1-$2")"
	fi
	printf '%s\n' "$line"
}

# join_runs PREFIX N: PREFIX1,PREFIX2,...,PREFIXN (an ensemble's --model list)
join_runs() {
	local out="" i
	for ((i = 1; i <= $2; i++)); do out+="${out:+,}$1$i"; done
	printf '%s\n' "$out"
}
