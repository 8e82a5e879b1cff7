#!/usr/bin/env bash
# Side by side on one PyTorch trace: oxprof's importer against HTA's trace loader (PyPI
# `traceinsight` 0.6.1, formerly holistictraceanalysis) and torch-tb-profiler 0.4.3's loader:
# wall time and peak RSS of each, one process each, one after the other (2-core machine:
# nothing else of ours runs meanwhile). Prints a Markdown table.
#
#   scripts/bench/kineto-loaders.sh [TRACE]      # default: bench-data/kineto_large.pt.trace.json
#   scripts/bench/kineto-loaders.sh --install    # only create the venv
#
# Environment: OXPROF_KINETO_BENCH_VENV (default ~/.cache/oxprof-kineto-bench/venv),
# OXPROF_BIN (default target/release/oxprof, built if missing), SKIP_PYTHON=1 (oxprof only).
# The Python loaders read the whole file into memory; give them a trace they can hold
# (tb-profiler needs ~10x its size; on this 24 GB machine ~1 GB is its ceiling).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${OXPROF_KINETO_BENCH_VENV:-$HOME/.cache/oxprof-kineto-bench/venv}"
TRACE="$ROOT/bench-data/kineto_large.pt.trace.json"
install_only=0
for arg in "$@"; do
  case "$arg" in
    --install) install_only=1 ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) TRACE="$arg" ;;
  esac
done

if [[ "${SKIP_PYTHON:-0}" != 1 ]] && ! "$VENV/bin/python" -c "import hta, torch_tb_profiler" 2>/dev/null; then
  echo "creating $VENV (traceinsight 0.6.1, torch-tb-profiler 0.4.3)" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip
  "$VENV/bin/pip" install --quiet traceinsight==0.6.1 torch-tb-profiler==0.4.3
fi
[[ "$install_only" == 1 ]] && exit 0
[[ -f "$TRACE" ]] || { echo "no trace $TRACE (scripts/gen/large-kineto-trace.sh makes one)" >&2; exit 1; }

BIN="${OXPROF_BIN:-$ROOT/target/release/oxprof}"
if [[ ! -x "$BIN" ]]; then
  cargo build --release --locked -p oxprof --manifest-path "$ROOT/Cargo.toml" >&2
fi

# Runs a command under GNU time; prints "seconds max_rss_kb".
measure() {
  local out
  out="$(mktemp)"
  /usr/bin/time -f '%e %M' -o "$out" "$@" >/dev/null 2>"$out.err" || { cat "$out.err" >&2; rm -f "$out" "$out.err"; return 1; }
  cat "$out"
  rm -f "$out" "$out.err"
}

size=$(stat -c %s "$TRACE")
echo "| loader | trace | seconds | MB/s | peak RSS (MB) | RSS / file |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
row() { # name seconds rss_kb
  awk -v n="$1" -v s="$2" -v r="$3" -v b="$size" -v f="$(basename "$TRACE")" \
    'BEGIN { printf "| %s | %s (%.0f MB) | %.2f | %.0f | %.0f | %.2f |\n", n, f, b/1e6, s, b/1e6/s, r*1024/1e6, r*1024/b }'
}
read -r s r < <(measure "$BIN" inspect "$TRACE")
row "oxprof inspect (release)" "$s" "$r"
if [[ "${SKIP_PYTHON:-0}" != 1 ]]; then
  read -r s r < <(measure "$VENV/bin/python" "$ROOT/scripts/bench/load-hta.py" "$TRACE")
  row "HTA (traceinsight 0.6.1) parse_trace_dataframe" "$s" "$r"
  read -r s r < <(measure "$VENV/bin/python" "$ROOT/scripts/bench/load-tb-profiler.py" "$TRACE")
  row "torch-tb-profiler 0.4.3 RunProfileData.parse + process" "$s" "$r"
fi
