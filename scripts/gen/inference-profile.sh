#!/usr/bin/env bash
# Make the real serving profile of oxprof's inference tests, testdata/inference/tf_serving/
# (gzip-compressed, committed; see testdata/README.md), from scripts/gen/inference-profile.py
# (TensorFlow on CPU: in-graph batching with `BatchFunction` for model mlp:1, unbatched
# model tiny:2, each request a `ModelServerRequest_predict` TraceMe with _r=1), then XProf
# 2.24.2's outputs for it (xprof_out/, by the refkit's xprof_convert.py).
#
#   scripts/gen/inference-profile.sh            # does nothing when the folder exists
#   scripts/gen/inference-profile.sh --force    # regenerate (profile and XProf outputs)
#   scripts/gen/inference-profile.sh --tpu-outputs
#       XProf's outputs for the synthetic TPU serving run testdata/inference/tpu_synthetic
#       (two hosts written by crates/oxprof-api/tests/golden_inference.rs;
#       `OXPROF_REGEN_TESTDATA=1 cargo test -p oxprof-api --test golden_inference synthetic`
#       rewrites them): ALL_HOSTS by xprof_convert.py, each host's inference_profile,
#       overview_page, input_pipeline_analyzer and framework_op_stats on its own.
#
# Environment: OXPROF_REFKIT_VENV (default ~/.cache/oxprof-refkit/venv, with tensorflow and
# xprof; see ../shared/refkit/README.md), OXPROF_REFKIT (default ../shared/refkit).
# About 10 s for the profile and 30 s for XProf's outputs on 2 cores.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${OXPROF_REFKIT_VENV:-$HOME/.cache/oxprof-refkit/venv}"
REFKIT="${OXPROF_REFKIT:-$ROOT/../shared/refkit}"
PY="$VENV/bin/python"
OUT="$ROOT/testdata/inference/tf_serving"

force=0
tpu=0
for arg in "$@"; do
  case "$arg" in
    --force | -f) force=1 ;;
    --tpu-outputs) tpu=1 ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $arg (usage: $0 [--force | --tpu-outputs])" >&2; exit 2 ;;
  esac
done
if [ ! -x "$PY" ] || [ ! -f "$REFKIT/xprof_convert.py" ]; then
  echo "needs the refkit venv at $VENV and $REFKIT/xprof_convert.py (set OXPROF_REFKIT_VENV / OXPROF_REFKIT)" >&2
  exit 1
fi

if [ "$tpu" = 1 ]; then
  TPU="$ROOT/testdata/inference/tpu_synthetic"
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/oxprof-inference-tpu.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  run="$(basename "$(find "$TPU/plugins/profile" -mindepth 1 -maxdepth 1 -type d | head -1)")"
  mkdir -p "$tmp/tpu_synthetic/plugins/profile/$run"
  hosts=()
  for f in "$TPU/plugins/profile/$run"/*.xplane.pb.gz; do
    h="$(basename "$f" .xplane.pb.gz)"
    hosts+=("$h")
    gunzip -c "$f" > "$tmp/tpu_synthetic/plugins/profile/$run/$h.xplane.pb"
  done
  (cd "$REFKIT" && "$PY" xprof_convert.py "$tmp/tpu_synthetic" > "$tmp/convert.log" 2>&1) || {
    tail -20 "$tmp/convert.log" >&2
    exit 1
  }
  rm -rf "$TPU/xprof_out"
  mkdir -p "$TPU/xprof_out"
  cp -r "$tmp/tpu_synthetic/xprof_out" "$TPU/xprof_out/ALL_HOSTS"
  rm -f "$TPU/xprof_out/ALL_HOSTS/trace_viewer.json" "$TPU/xprof_out/ALL_HOSTS/trace_viewer@.resolution0.json"
  for h in "${hosts[@]}"; do
    # One host alone: its own session (XProf writes caches next to the file).
    mkdir -p "$tmp/$h" "$TPU/xprof_out/$h"
    cp "$tmp/tpu_synthetic/plugins/profile/$run/$h.xplane.pb" "$tmp/$h/"
    for tool in inference_profile overview_page input_pipeline_analyzer framework_op_stats; do
      "$PY" - "$tool" "$tmp/$h/$h.xplane.pb" "$h" > "$TPU/xprof_out/$h/$tool.json" 2> "$tmp/$h.$tool.log" <<'PY'
import sys
from xprof.convert import raw_to_tool_data as r2t
tool, path, host = sys.argv[1:4]
data, _ = r2t.xspace_to_tool_data([path], tool, {"use_saved_result": False, "host": host, "hosts": [host]})
sys.stdout.write(data.decode() if isinstance(data, bytes) else data)
PY
    done
  done
  echo "wrote $TPU/xprof_out ($(du -sh "$TPU/xprof_out" | cut -f1))"
  exit 0
fi

if [ -d "$OUT" ] && [ "$force" = 0 ]; then
  echo "$OUT exists; skipped (use --force to regenerate)"
  exit 0
fi
tmp="$(mktemp -d "${TMPDIR:-/tmp}/oxprof-inference.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
"$PY" "$ROOT/scripts/gen/inference-profile.py" --logdir "$tmp/tf_serving"
mapfile -t found < <(find "$tmp/tf_serving" -type f -name '*.xplane.pb' | sort)
if [ "${#found[@]}" -ne 1 ]; then
  echo "expected one .xplane.pb under $tmp/tf_serving, found ${#found[@]}" >&2
  exit 1
fi
run="$(basename "$(dirname "${found[0]}")")"
(cd "$REFKIT" && "$PY" xprof_convert.py "$tmp/tf_serving" > "$tmp/convert.log" 2>&1) || {
  tail -20 "$tmp/convert.log" >&2
  exit 1
}
rm -rf "$OUT"
mkdir -p "$OUT/plugins/profile/$run"
gzip -9 -n -c "${found[0]}" > "$OUT/plugins/profile/$run/vm.xplane.pb.gz"
cp -r "$tmp/tf_serving/xprof_out" "$OUT/xprof_out"
# The full traces are large and not compared; the streaming one is kept gzip-compressed.
rm -f "$OUT/xprof_out/trace_viewer.json" "$OUT/xprof_out/trace_viewer@.resolution0.json"
gzip -9 -n "$OUT/xprof_out/trace_viewer@.json"
echo "wrote $OUT ($(du -sh "$OUT" | cut -f1))"
