#!/usr/bin/env bash
# Huge PyTorch traces on one machine (issue 43): one trace, every step a user takes, each in a
# fresh process, one after the other (2-core machine: nothing else of ours runs meanwhile).
# Prints one Markdown table: wall time and peak RSS (and RSS as a share of the JSON) of
#   - the import alone (`oxprof inspect`),
#   - the trace viewer's opening views through a cold `oxprof serve` (scripts/bench/reopen.sh:
#     track list + whole-trace window), and the same from a new server with the cache filled,
#   - `pytorch_overview` and `hta_distributed` cold (`oxprof data --no-cache`: one parse each),
#   - every PyTorch view and HTA tool from the persistent cache once one of them ran.
#
#   scripts/bench/huge-traces.sh [TRACE]   # default bench-data/kineto_10g.pt.trace.json
#     (KINETO_SIZE_MB=10240 KINETO_OUT=bench-data/kineto_10g.pt.trace.json scripts/gen/large-kineto-trace.sh)
#
# Environment: OXPROF_BIN (default target/release/oxprof, built when missing).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TRACE="${1:-$ROOT/bench-data/kineto_10g.pt.trace.json}"
BIN="${OXPROF_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/oxprof}"
[ -f "$TRACE" ] || { echo "no trace at $TRACE (see the header)" >&2; exit 2; }
[ -x "$BIN" ] || (cd "$ROOT" && cargo build --release -p oxprof --locked >&2)
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (GNU time)" >&2; exit 2; }

BYTES=$(stat -Lc %s "$TRACE")
# JSON traces over protobuf's 2 GiB: the input budget raised to the file's size.
LIMIT="--max-profile-bytes $((BYTES + (1 << 30)))"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/run/plugins/profile/r1"
ln "$(realpath "$TRACE")" "$scratch/run/plugins/profile/r1/$(basename "$TRACE")" 2>/dev/null ||
  cp "$TRACE" "$scratch/run/plugins/profile/r1/$(basename "$TRACE")"

row() { # label, seconds, peak KB
  printf '| %s | %s s | %s MiB (%.2f×) |\n' "$1" "$2" "$(($3 / 1024))" "$(echo "$3 * 1024 / $BYTES" | bc -l)"
}
timed() { # label, oxprof arguments...
  local label="$1"
  shift
  # shellcheck disable=SC2086 # LIMIT holds two words
  /usr/bin/time -f '%e %M' -o "$scratch/time" "$BIN" "$@" $LIMIT >/dev/null 2>"$scratch/err" ||
    { echo "oxprof $*: failed: $(tail -1 "$scratch/err")" >&2; exit 1; }
  read -r s kb <"$scratch/time"
  row "$label" "$s" "$kb"
}

echo "trace $(basename "$TRACE") ($BYTES bytes); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| step | time | peak RSS (× the JSON) |"
echo "|---|---:|---:|"
timed "import (\`oxprof inspect\`)" inspect "$TRACE"
while read -r label s kb; do
  case "$label" in
    cold) label="cold \`oxprof serve\`" ;;
    *) label="a new \`oxprof serve\`, persistent cache filled" ;;
  esac
  row "trace viewer opening views (track list + whole-trace window), $label" "$s" "$kb"
done < <(RUNS=1 OXPROF_BIN="$BIN" OXPROF_SERVE_ARGS="$LIMIT" "$ROOT/scripts/bench/reopen.sh" "$TRACE" |
  sed -n 's/^\(cold\|reopen\) *trace viewer opening views *\([0-9.]*\) s (peak RSS \([0-9]*\) MiB).*/\1 \2 \3/p' |
  awk '{ printf "%s %s %d\n", ($1 == "cold" ? "cold" : "new"), $2, $3 * 1024 }')
for tool in pytorch_overview hta_distributed; do
  timed "\`$tool\` cold (one parse)" data "$tool" "$scratch/run" --no-cache
done
timed "\`hta_gpu_idle\` cold, keeping every view and rank on disk" data hta_gpu_idle "$scratch/run" --cache-dir "$scratch/cache"
for tool in pytorch_overview pytorch_op_stats pytorch_kernel_stats pytorch_memory pytorch_modules hta_distributed hta_gpu_idle; do
  timed "\`$tool\` after, a new process" data "$tool" "$scratch/run" --cache-dir "$scratch/cache"
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
