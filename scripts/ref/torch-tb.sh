#!/usr/bin/env bash
# Golden outputs of torch-tb-profiler 0.4.3's own Python backend (RunProfileData: its event
# parser, operator tree, overall/GPU-metrics/tensor-core/kernel parsers, memory parser and
# memory view; no TensorBoard, no browser) for oxprof's PyTorch analyses (crates/oxprof-pytorch/src/). Writes one
# JSON per trace under testdata/torch-tb/ (see its README.md); the Rust golden tests
# (crates/oxprof-api/tests/golden_torch_tb.rs) compare oxprof's numbers with them.
#
#   scripts/ref/torch-tb.sh            # all traces (external ones when present)
#   scripts/ref/torch-tb.sh --install  # only create the venv
#   scripts/ref/torch-tb.sh --check    # recompute into a temporary directory and fail if
#                                      # any committed golden differs (CI: scripts/test.sh)
#
# The venv is cached in $OXPROF_TORCH_TB_VENV (default ~/.cache/oxprof-torch-tb-ref/venv):
# copied from ~/.cache/oxprof-kineto-bench/venv when that has torch_tb_profiler 0.4.3, else
# made with pip (torch-tb-profiler==0.4.3 pulls pandas and tensorboard, no torch).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${OXPROF_TORCH_TB_VENV:-$HOME/.cache/oxprof-torch-tb-ref/venv}"
EXT="${OXPROF_EXTERNAL:-$ROOT/../shared/testdata/external}"
OUT="$ROOT/testdata/torch-tb"

ok() { "$1/bin/python" -c "import torch_tb_profiler, importlib.metadata as m; assert m.version('torch-tb-profiler') == '0.4.3'" 2>/dev/null; }
SEED="$HOME/.cache/oxprof-kineto-bench/venv"
if [[ ! -e "$VENV" ]] && ok "$SEED"; then mkdir -p "$(dirname "$VENV")"; ln -s "$SEED" "$VENV"; fi
if [[ ! -x "$VENV/bin/python" ]] || ! ok "$VENV"; then
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  echo "creating $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip
  # setuptools < 81 still has pkg_resources, which tensorboard's plugin loader imports.
  "$VENV/bin/pip" install --quiet "torch-tb-profiler==0.4.3" pandas "setuptools<81"
fi
[[ "${1:-}" == "--install" ]] && exit 0
check=0
if [[ "${1:-}" == "--check" ]]; then
  check=1
  OUT="$(mktemp -d)"
  trap 'rm -rf "$OUT"' EXIT
fi

traces=("$ROOT"/testdata/kineto/*/*.pt.trace.json.gz)
if [[ -d "$EXT" ]]; then
  while IFS= read -r f; do traces+=("$f"); done < <(
    find "$EXT/pytorch-kineto/tb_plugin/samples/resnet50_num_workers_0" \
      "$EXT/facebookresearch-HolisticTraceAnalysis/tests/data" \
      "$EXT/AMD-AGI-TraceLens/tests/traces" -name '*.json.gz' 2>/dev/null | sort)
else
  echo "no $EXT: only the committed fixtures" >&2
fi
mkdir -p "$OUT"
"$VENV/bin/python" "$ROOT/scripts/ref/torch-tb.py" --root "$ROOT" --external "$EXT" --out "$OUT" "${traces[@]}"
if [[ "$check" == 1 ]]; then
  status=0
  for f in "$OUT"/*.json; do
    if ! cmp -s "$f" "$ROOT/testdata/torch-tb/$(basename "$f")"; then
      echo "testdata/torch-tb/$(basename "$f") is not what torch-tb-profiler gives now (rerun scripts/ref/torch-tb.sh)" >&2
      status=1
    fi
  done
  [[ "$status" == 0 ]] && echo "torch-tb-profiler goldens reproduced ($(ls "$OUT"/*.json | wc -l) traces)" >&2
  exit "$status"
fi
