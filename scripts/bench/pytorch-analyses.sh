#!/usr/bin/env bash
# Side by side on one PyTorch trace: the analyses behind oxprof's PyTorch and HTA tools,
# against the same analyses in torch-tb-profiler 0.4.3 and HTA 0.6.1 (PyPI `traceinsight`),
# one process each, one after the other, each from a cold start (the trace read first).
#
#   oxprof:   a release `oxprof serve`, first request of each tool in turn
#             (scripts/bench/torch-switch.py): the first is cold (import + parse), the
#             others answer from what the session keeps; server peak RSS.
#   torch-tb: RunProfileData read/process/analyze + RunGenerator.generate_run_profile
#             (scripts/bench/time-tb-profiler.py): what its loader does before any view.
#   HTA:      TraceAnalysis load, then temporal breakdown, comm/comp overlap, idle time,
#             kernel launch stats, queue length (scripts/bench/time-hta.py).
#
#   scripts/bench/pytorch-analyses.sh [TRACE]   # default bench-data/kineto_512.pt.trace.json
#
# Environment: OXPROF_BIN (default target/release/oxprof, built if missing),
# OXPROF_KINETO_BENCH_VENV (see scripts/bench/kineto-loaders.sh, which creates it),
# SKIP_TB=1 / SKIP_HTA=1 to leave a reference out (torch-tb-profiler holds ~10x the file in
# memory, HTA ~5x: on this 24 GB machine torch-tb-profiler cannot load the 2 GB trace).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${OXPROF_KINETO_BENCH_VENV:-$HOME/.cache/oxprof-kineto-bench/venv}"
TRACE="${1:-$ROOT/bench-data/kineto_512.pt.trace.json}"
[[ -f "$TRACE" ]] || { echo "no trace $TRACE (scripts/gen/large-kineto-trace.sh makes one)" >&2; exit 1; }
TRACE="$(realpath "$TRACE")" # HTA wants an absolute path
if ! "$VENV/bin/python" -c "import hta, torch_tb_profiler" 2>/dev/null; then
  "$ROOT/scripts/bench/kineto-loaders.sh" --install
fi
BIN="${OXPROF_BIN:-$ROOT/target/release/oxprof}"
if [[ ! -x "$BIN" ]]; then
  cargo build --release --locked -p oxprof --manifest-path "$ROOT/Cargo.toml" >&2
fi

echo "trace: $TRACE ($(($(stat -c %s "$TRACE") / 1000000)) MB); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "## oxprof ($BIN serve, fresh cache directory)"
cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT
OXPROF_CACHE_DIR="$cache" python3 "$ROOT/scripts/bench/torch-switch.py" "$BIN" "$TRACE" --cache-mb 8192 \
  --tools pytorch_overview,pytorch_op_stats,pytorch_kernel_stats,pytorch_memory,pytorch_modules,hta_distributed,hta_gpu_idle

peak() { # prints the command's output, then its wall time and peak RSS; its log lines counted
  local out err
  out="$(mktemp)"
  err="$(mktemp)"
  /usr/bin/time -f 'whole process: %e s, peak RSS %M KB' -o "$out" "$@" 2>"$err" || tail -5 "$err"
  cat "$out"
  echo "($(wc -l <"$err") lines on stderr, e.g. torch-tb-profiler's \"ranges on the same thread should not intersect\")"
  rm -f "$out" "$err"
}
if [[ "${SKIP_TB:-0}" != 1 ]]; then
  echo
  echo "## torch-tb-profiler 0.4.3"
  peak "$VENV/bin/python" "$ROOT/scripts/bench/time-tb-profiler.py" "$TRACE"
fi
if [[ "${SKIP_HTA:-0}" != 1 ]]; then
  echo
  echo "## HTA 0.6.1"
  peak "$VENV/bin/python" "$ROOT/scripts/bench/time-hta.py" "$TRACE"
fi
