#!/usr/bin/env bash
# Cold wall time of `oxprof diff` (issue 16's budgets: two 85 MB JAX profiles ≤ 1 s, against
# a saved summary ≤ 0.5 s), measured in alternation with a cold `oxprof data overview_page`
# of one of them (what one side costs), each number printed with the machine's load
# average at the time (`uptime`): on a shared machine, compare rows of one round.
#
#   scripts/bench/diff.sh [ROUNDS]     # default 5 rounds
#
# Environment:
#   OXPROF_BIN       the oxprof binary (default: a release build made here)
#   OXPROF_BENCH_A   profile A (default bench-data/jax_large.xplane.pb, made by
#                    scripts/gen/large-profile.sh)
#   OXPROF_BENCH_B   profile B, another run of the same program (default
#                    bench-data/jax_large_b.xplane.pb: OXPROF_LARGE_PROFILE_OUT=that
#                    scripts/gen/large-profile.sh)
# Every run is cold: --no-cache (no persistent analysis cache), a fresh process.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ROUNDS="${1:-5}"
A="${OXPROF_BENCH_A:-$ROOT/bench-data/jax_large.xplane.pb}"
B="${OXPROF_BENCH_B:-$ROOT/bench-data/jax_large_b.xplane.pb}"
for f in "$A" "$B"; do
  if [ ! -f "$f" ]; then
    echo "bench-diff: $f is missing: make it with scripts/gen/large-profile.sh (OXPROF_LARGE_PROFILE_OUT=$f for B)" >&2
    exit 1
  fi
done
BIN="${OXPROF_BIN:-}"
if [ -z "$BIN" ]; then
  (cd "$ROOT" && cargo build --release -p oxprof --locked --quiet)
  BIN="$ROOT/target/release/oxprof"
fi
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
"$BIN" summary "$A" --no-cache --out "$TMP/a.json" 2>/dev/null
"$BIN" summary "$B" --no-cache --out "$TMP/b.json" 2>/dev/null

# One timed command: "name  seconds  peak-RSS  load-1min".
measure() {
  local name="$1"
  shift
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f "%e %M" -o "$TMP/time" "$BIN" "$@" >/dev/null 2>"$TMP/err" || {
    # diff exits 1 only when a gate trips (none here): anything else is a failure.
    echo "bench-diff: oxprof $* failed: $(cat "$TMP/err")" >&2
    exit 1
  }
  read -r secs kb <"$TMP/time"
  printf '%-28s %6.2f s  %5d MB  load %s\n' "$name" "$secs" $((kb / 1024)) "$load"
  echo "$name $secs" >>"$TMP/all"
}

echo "oxprof diff, cold (--no-cache); A=$(basename "$A") ($(stat -c %s "$A") bytes), B=$(basename "$B") ($(stat -c %s "$B") bytes); $(nproc) cores"
for round in $(seq 1 "$ROUNDS"); do
  echo "round $round"
  measure "overview_page A" data overview_page "$A" --no-cache
  measure "diff A B" diff "$A" "$B" --no-cache
  measure "diff summary(A) B" diff "$TMP/a.json" "$B" --no-cache
  measure "diff summary(A) summary(B)" diff "$TMP/a.json" "$TMP/b.json" --no-cache
  measure "diff A A (one file)" diff "$A" "$A" --no-cache
done
echo "medians (min) over $ROUNDS rounds:"
for name in "overview_page A" "diff A B" "diff summary(A) B" "diff summary(A) summary(B)" "diff A A (one file)"; do
  grep -F "$name " "$TMP/all" | awk '{print $NF}' | sort -n | awk -v n="$name" '{v[NR]=$1} END {printf "  %-28s %.2f s (%.2f s)\n", n, v[int((NR+1)/2)], v[1]}'
done
