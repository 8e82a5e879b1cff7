#!/usr/bin/env bash
# Record small real PyTorch profiler traces (CPU) with scripts/gen/torch-traces.py: a
# training loop (schedule, record_shapes, profile_memory, with_stack, a DataLoader with 2
# workers) and a 2-process DDP run on gloo. They are the fixtures under testdata/kineto/
# (see its PROVENANCE.md); tests read the committed copies, so this runs only to remake them.
#
#   scripts/gen/torch-traces.sh [OUTDIR]     # default: bench-data/torch-traces
#   scripts/gen/torch-traces.sh --install    # only create the venv
#
# The venv is cached in $OXPROF_TORCH_VENV (default ~/.cache/oxprof-torch/venv). torch comes
# from PyTorch's CPU wheel index when it is reachable (~200 MB), else from PyPI (its wheel
# brings the CUDA libraries: a ~6 GB venv, ~3 min). TORCH_VERSION pins it (default 2.15.0).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${OXPROF_TORCH_VENV:-$HOME/.cache/oxprof-torch/venv}"
VERSION="${TORCH_VERSION:-2.15.0}"
install_only=0
OUT="$ROOT/bench-data/torch-traces"
for arg in "$@"; do
  case "$arg" in
    --install) install_only=1 ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) OUT="$arg" ;;
  esac
done

if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  echo "creating $VENV with torch $VERSION" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip
  if ! "$VENV/bin/pip" install --quiet --timeout 15 --retries 0 \
      --index-url https://download.pytorch.org/whl/cpu "torch==$VERSION" 2>/dev/null; then
    echo "PyTorch's CPU index unreachable: installing torch from PyPI" >&2
    "$VENV/bin/pip" install --quiet "torch==$VERSION"
  fi
  "$VENV/bin/pip" install --quiet numpy
fi
[[ "$install_only" == 1 ]] && exit 0
mkdir -p "$OUT"
"$VENV/bin/python" "$ROOT/scripts/gen/torch-traces.py" "$OUT"
find "$OUT" -name '*.pt.trace.json.gz' -newer "$ROOT/scripts/gen/torch-traces.py" -printf '%p %s bytes\n' 2>/dev/null || true
