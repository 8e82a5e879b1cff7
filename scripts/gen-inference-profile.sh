#!/usr/bin/env bash
# Make the real serving profile of oxprof's inference tests, testdata/inference/tf_serving/
# (gzip-compressed, committed; see testdata/README.md), from scripts/gen_inference_profile.py
# (TensorFlow on CPU: in-graph batching with `BatchFunction` for model mlp:1, unbatched
# model tiny:2, each request a `ModelServerRequest_predict` TraceMe with _r=1), then XProf
# 2.24.2's outputs for it (xprof_out/, by the refkit's xprof_convert.py).
#
#   scripts/gen-inference-profile.sh            # does nothing when the folder exists
#   scripts/gen-inference-profile.sh --force    # regenerate (profile and XProf outputs)
#
# Environment: OXPROF_REFKIT_VENV (default ~/.cache/oxprof-refkit/venv, with tensorflow and
# xprof; see ../shared/refkit/README.md), OXPROF_REFKIT (default ../shared/refkit).
# About 10 s for the profile and 30 s for XProf's outputs on 2 cores.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${OXPROF_REFKIT_VENV:-$HOME/.cache/oxprof-refkit/venv}"
REFKIT="${OXPROF_REFKIT:-$ROOT/../shared/refkit}"
PY="$VENV/bin/python"
OUT="$ROOT/testdata/inference/tf_serving"

force=0
for arg in "$@"; do
  case "$arg" in
    --force | -f) force=1 ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $arg (usage: $0 [--force])" >&2; exit 2 ;;
  esac
done
if [ -d "$OUT" ] && [ "$force" = 0 ]; then
  echo "$OUT exists; skipped (use --force to regenerate)"
  exit 0
fi
if [ ! -x "$PY" ] || [ ! -f "$REFKIT/xprof_convert.py" ]; then
  echo "needs the refkit venv at $VENV and $REFKIT/xprof_convert.py (set OXPROF_REFKIT_VENV / OXPROF_REFKIT)" >&2
  exit 1
fi
tmp="$(mktemp -d "${TMPDIR:-/tmp}/oxprof-inference.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
"$PY" "$ROOT/scripts/gen_inference_profile.py" --logdir "$tmp/tf_serving"
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
