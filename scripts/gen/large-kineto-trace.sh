#!/usr/bin/env bash
# Make the large PyTorch benchmark trace bench-data/kineto_large.pt.trace.json (about 2 GB,
# not committed: bench-data/ is git-ignored) by repeating a real Kineto trace's events with
# shifted timestamps and fresh ids (scripts/gen/large-kineto-trace.py).
#
#   scripts/gen/large-kineto-trace.sh            # does nothing if the file already exists
#   scripts/gen/large-kineto-trace.sh --force    # regenerate it
#
# Environment:
#   KINETO_SOURCE   the trace to repeat (default: HTA's A100 ns-resolution trace under
#                   ../shared/testdata/external)
#   KINETO_SIZE_MB  size to reach (default 2048)
#   KINETO_OUT      output (default bench-data/kineto_large.pt.trace.json)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SOURCE="${KINETO_SOURCE:-$ROOT/../shared/testdata/external/facebookresearch-HolisticTraceAnalysis/tests/data/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz}"
OUT="${KINETO_OUT:-$ROOT/bench-data/kineto_large.pt.trace.json}"
SIZE_MB="${KINETO_SIZE_MB:-2048}"

force=0
for arg in "$@"; do
  case "$arg" in
    --force | -f) force=1 ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $arg (usage: $0 [--force])" >&2; exit 2 ;;
  esac
done
if [[ -f "$OUT" && "$force" == 0 ]]; then
  echo "$OUT exists (--force to regenerate)"
  exit 0
fi
if [[ ! -f "$SOURCE" ]]; then
  echo "source trace $SOURCE not found (set KINETO_SOURCE)" >&2
  exit 1
fi
mkdir -p "$(dirname "$OUT")"
python3 "$ROOT/scripts/gen/large-kineto-trace.py" "$SOURCE" "$OUT.tmp" "$SIZE_MB"
mv "$OUT.tmp" "$OUT"
