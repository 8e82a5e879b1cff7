#!/usr/bin/env bash
# Record HTA's TraceDiff on pairs of PyTorch traces as golden files under
# testdata/diff/hta/ (committed), the reference of oxprof diff's parity test
# (crates/oxprof-api/tests/diff_hta.rs):
#
#   hta_sampled_rank0_vs_rank1   HTA's own 2-rank GPU traces (tests/data/trace_filter)
#   kineto_ddp_rank0_vs_rank1    testdata/kineto/ddp (CPU DDP over gloo, 2 ranks)
#
# The venv (PyPI traceinsight==0.6.1, module `hta`; it pulls jupyterlab: ~500 MB, minutes)
# is built on first use under
# ~/.cache/oxprof-hta-diff-ref/venv (override: OXPROF_HTA_VENV). External traces are read
# in place from ../shared/testdata/external (OXPROF_EXTERNAL_TESTDATA); a pair whose traces
# are absent is skipped with a line saying so.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${OXPROF_HTA_VENV:-$HOME/.cache/oxprof-hta-diff-ref/venv}"
EXTERNAL="${OXPROF_EXTERNAL_TESTDATA:-$ROOT/../shared/testdata/external}"
OUT="$ROOT/testdata/diff/hta"

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import hta.trace_diff' 2>/dev/null; then
  echo "building the HTA venv in $VENV (traceinsight 0.6.1)"
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check 'traceinsight==0.6.1'
fi
"$VENV/bin/python" -c 'import importlib.metadata as m; v = m.version("traceinsight"); assert v == "0.6.1", v'

mkdir -p "$OUT"
record() {
  local name="$1" dir="$2"
  if [ ! -d "$dir" ]; then
    echo "skipping $name: $dir is absent"
    return
  fi
  # Paths relative to the repository in the goldens (no machine's absolute paths).
  dir=$(realpath --relative-to="$ROOT" "$dir")
  (cd "$ROOT" && "$VENV/bin/python" scripts/ref/hta-diff.py "$OUT" "$name" "$dir" 0 "$dir" 1) 2> >(grep -v -i 'warn\|pars' >&2)
}
record hta_sampled_rank0_vs_rank1 "$EXTERNAL/facebookresearch-HolisticTraceAnalysis/tests/data/trace_filter"
record kineto_ddp_rank0_vs_rank1 "$ROOT/testdata/kineto/ddp"
