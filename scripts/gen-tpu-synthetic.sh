#!/usr/bin/env bash
# Makes the synthetic TPU profiles of testdata/tpu-synthetic/ and records XProf 2.24.2's
# outputs for them (testdata/README.md says what each one is).
#
# 1. `cargo run --example gen_tpu_counters` (crates/oxprof-xspace/examples/) writes the
#    gzip'd XSpaces, deterministically, with oxprof's model builder and encoder.
# 2. Each profile is gunzipped into a scratch directory and converted by XProf's own C++
#    converters (scripts/tpu_synthetic_ref.py, which reuses ../shared/refkit's
#    xprof_convert.py, in the refkit venv); the outputs of the tools these profiles are for
#    are kept as testdata/tpu-synthetic/<case>/xprof_out/<host or ALL_HOSTS>/<tool>.json.
#
# Environment: OXPROF_REFKIT (default ../shared/refkit), OXPROF_REFKIT_VENV (default
# ~/.cache/oxprof-refkit/venv, made from the refkit's requirements-lock.txt).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
REFKIT="${OXPROF_REFKIT:-$ROOT/../shared/refkit}"
VENV="${OXPROF_REFKIT_VENV:-$HOME/.cache/oxprof-refkit/venv}"
OUT="$ROOT/testdata/tpu-synthetic"

cd "$ROOT"
CARGO_INCREMENTAL=0 cargo run -q -p oxprof-xspace --no-default-features --example gen_tpu_counters -- "$OUT"

SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
for case_dir in "$OUT"/*/; do
  case_name="$(basename "$case_dir")"
  logdir="$SCRATCH/$case_name"
  while IFS= read -r gz; do
    rel="${gz#"$case_dir"}"
    mkdir -p "$logdir/$(dirname "$rel")"
    gunzip -c "$gz" > "$logdir/${rel%.gz}"
  done < <(find "$case_dir" -name '*.xplane.pb.gz' | sort)
  run_dir="$(dirname "$(find "$logdir" -name '*.xplane.pb' | head -1)")"
  rm -rf "$case_dir/xprof_out"
  "$VENV/bin/python" "$ROOT/scripts/tpu_synthetic_ref.py" "$REFKIT" "$run_dir" "$case_dir/xprof_out" \
    > "$SCRATCH/log-$case_name.txt" 2>&1 || { cat "$SCRATCH/log-$case_name.txt"; exit 1; }
  echo "$case_name: $(find "$case_dir/xprof_out" -type f | wc -l) XProf outputs"
done
