#!/usr/bin/env bash
# Two oxprof builds, cold, alternated in one run: what a change costs. Each round runs every
# case with build A then build B (the order swapped every other round, so drift in the
# machine's load falls on both), each a fresh process with the persistent cache off
# (`--no-cache`), whole-process wall time and peak RSS from /usr/bin/time. Prints one
# Markdown table of medians and the ratio B/A.
#
#   scripts/bench/ab-cold.sh OLD_BIN NEW_BIN [ROUNDS]     # ROUNDS default 7
#
# The cases (skipped with a line when their input is missing):
#   overview_page and trace_viewer@ (resolution 8000) of bench-data/jax_large.xplane.pb
#     (scripts/gen/large-profile.sh), pytorch_overview of bench-data/kineto_ab.pt.trace.json
#     (scripts/gen/large-kineto-trace.sh with KINETO_SIZE_MB=256 KINETO_OUT=that path).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [ $# -lt 2 ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
A="$1"
B="$2"
ROUNDS="${3:-7}"
XSPACE="$ROOT/bench-data/jax_large.xplane.pb"
TORCH="$ROOT/bench-data/kineto_ab.pt.trace.json"

declare -a NAMES=() ARGS=()
add_case() { # name, input, arguments after the input
  local name="$1" input="$2"
  shift 2
  if [ ! -e "$input" ]; then
    echo "ab-cold: $name skipped: no $input" >&2
    return
  fi
  NAMES+=("$name")
  ARGS+=("data $name $input --format json --no-cache $*")
}
add_case overview_page "$XSPACE"
add_case trace_viewer@ "$XSPACE" --param resolution=8000
add_case pytorch_overview "$TORCH"
[ "${#NAMES[@]}" -gt 0 ] || { echo "ab-cold: no input found (see the header)" >&2; exit 1; }

results="$(mktemp)"
trap 'rm -f "$results"' EXIT
one() { # label, binary, case index: appends "case label seconds peak_kb"
  local label="$1" bin="$2" i="$3" line
  # shellcheck disable=SC2086
  line=$(/usr/bin/time -f '%e %M' "$bin" ${ARGS[$i]} 2>&1 >/dev/null | tail -1)
  echo "${NAMES[$i]} $label $line" >> "$results"
}
for ((round = 1; round <= ROUNDS; round++)); do
  for i in "${!NAMES[@]}"; do
    if ((round % 2)); then
      one A "$A" "$i"; one B "$B" "$i"
    else
      one B "$B" "$i"; one A "$A" "$i"
    fi
  done
  echo "ab-cold: round $round of $ROUNDS done (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done

python3 - "$results" "${NAMES[@]}" <<'EOF'
import statistics
import sys

path, names = sys.argv[1], sys.argv[2:]
runs = {}
for line in open(path):
    case, label, seconds, peak_kb = line.split()
    runs.setdefault((case, label), []).append((float(seconds), int(peak_kb)))
print("| case | A: median s | B: median s | B/A time | A: peak MB | B: peak MB | B/A peak |")
print("|---|---:|---:|---:|---:|---:|---:|")
for case in names:
    a, b = runs[(case, "A")], runs[(case, "B")]
    ta, tb = statistics.median(s for s, _ in a), statistics.median(s for s, _ in b)
    ma, mb = statistics.median(k for _, k in a) / 1000, statistics.median(k for _, k in b) / 1000
    print(f"| {case} | {ta:.3f} | {tb:.3f} | {tb / ta:.3f} | {ma:.0f} | {mb:.0f} | {mb / ma:.3f} |")
print(f"\n{len(runs[(names[0], 'A')])} rounds, alternated; medians.")
EOF
