#!/usr/bin/env bash
# Record Holistic Trace Analysis' numbers (PyPI traceinsight 0.6.1, module `hta`) for the
# HTA tools' golden tests: scripts/ref/hta-analyses.py runs HTA's TraceAnalysis on HTA's and
# TraceLens' GPU test traces (../shared/testdata/external, skipped when absent) and on the
# PyTorch fixtures of testdata/kineto, writing testdata/hta/<run>.json (see its README.md).
#
#   scripts/ref/hta.sh [OUTDIR] [RUN...]   # default OUTDIR: testdata/hta; RUNs: all
#
# The venv is cached in $OXPROF_HTA_VENV (default ~/.cache/oxprof-hta-ref/venv) and made
# with `pip install traceinsight==0.6.1` when it lacks HTA 0.6.1. OXPROF_EXTERNAL_TESTDATA
# points at the third-party traces (default /work/shared/testdata/external).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${OXPROF_HTA_VENV:-$HOME/.cache/oxprof-hta-ref/venv}"
VERSION=0.6.1
OUT="${1:-$ROOT/testdata/hta}"
shift || true

has_hta() {
  [[ -x "$1/bin/python" ]] && "$1/bin/python" - "$VERSION" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
import hta  # noqa: F401
sys.exit(0 if version("traceinsight") == sys.argv[1] else 1)
PY
}

if ! has_hta "$VENV"; then
  echo "creating $VENV with traceinsight==$VERSION" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip
  "$VENV/bin/pip" install --quiet "traceinsight==$VERSION"
fi

"$VENV/bin/python" "$ROOT/scripts/ref/hta-analyses.py" "$ROOT" "$OUT" "$@"
