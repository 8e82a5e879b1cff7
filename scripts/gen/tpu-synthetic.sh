#!/usr/bin/env bash
# Makes the synthetic TPU profiles of testdata/tpu-synthetic/ and XProf 2.24.2's outputs on
# them (testdata/README.md says what each one is). Three generators, all deterministic (the
# same bytes on every run), all writing with oxprof's model builder and XSpace encoder:
#   gen_tpu_training  (crates/oxprof-xspace/examples/)  training/, training_host_input/
#   gen_tpu_counters  (crates/oxprof-xspace/examples/)  counters/, counters-gpu/, counters-v7x/
#   gen_tpu_megascale (crates/oxprof-xspace/examples/)  megascale/, megascale-mixed/ (DCN collectives)
#
# Training runs: each selection (every host alone, and ALL_HOSTS for multi-host runs) is
# gunzipped into a scratch log directory and converted by the refkit's xprof_convert.py;
# the outputs of the analysis tools are kept under `<run>/xprof_out/<selection>/` (multi-host)
# or `<run>/xprof_out/` (one host), and XProf's combined OpStats of each run
# (scripts/ref/xprof-op-stats.py) as `<run>/xprof_out/op_stats.json.gz`.
# Counter and megascale runs: converted by scripts/ref/xprof-tpu-synthetic.py (which reuses the refkit's
# xprof_convert.py); outputs kept as `<run>/xprof_out/<host or ALL_HOSTS>/<tool>.json`; for
# megascale runs also XProf's Perfetto trace (scripts/ref/xprof-tpu-perfetto.py) as
# `<run>/xprof_out/<host>/megascale_stats.perfetto.gz`, and that trace of two third-party
# profiles into testdata/external-xprof-counters/ when ../shared/testdata/external has them.
#
#   scripts/gen/tpu-synthetic.sh           # regenerate the profiles and XProf's outputs
#   scripts/gen/tpu-synthetic.sh --check   # only check the committed profiles are what the
#                                          # generators write (no XProf needed; CI runs it)
#
# Environment: OXPROF_REFKIT_VENV   Python venv with xprof 2.24.2 (default:
# ~/.cache/oxprof-refkit/venv; ../shared/refkit/README.md says how it is made),
# OXPROF_REFKIT_DIR   the refkit's folder (default: ../shared/refkit).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${OXPROF_REFKIT_VENV:-$HOME/.cache/oxprof-refkit/venv}"
REFKIT="${OXPROF_REFKIT_DIR:-$ROOT/../shared/refkit}"
PY="$VENV/bin/python"
OUT="$ROOT/testdata/tpu-synthetic"
generate() { # generate DIR: the generators into DIR
  # Built with the whole workspace's features, as `cargo test --workspace` builds them (a
  # no-op after it; `cargo run -p oxprof-xspace` resolved other features and recompiled
  # their dependencies: 2 minutes of a CI run).
  (cd "$ROOT" && cargo build -q --locked --workspace --examples)
  local examples
  examples="$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/debug/examples"
  for generator in gen_tpu_training gen_tpu_counters gen_tpu_megascale; do
    "$examples/$generator" "$1" >/dev/null
  done
}

if [ "${1:-}" = "--check" ]; then
  fresh="$(mktemp -d /tmp/oxprof-tpu-synthetic-check.XXXXXX)"
  trap 'rm -rf "$fresh"' EXIT
  generate "$fresh"
  status=0
  while IFS= read -r f; do
    rel="${f#"$fresh"/}"
    cmp -s "$f" "$OUT/$rel" || { echo "testdata/tpu-synthetic/$rel differs from what the generator writes (run scripts/gen/tpu-synthetic.sh)" >&2; status=1; }
  done < <(find "$fresh" -name '*.xplane.pb.gz' | sort)
  # And nothing committed that the generators no longer write.
  while IFS= read -r f; do
    rel="${f#"$OUT"/}"
    [ -e "$fresh/$rel" ] || { echo "testdata/tpu-synthetic/$rel is not written by any generator" >&2; status=1; }
  done < <(find "$OUT" -name '*.xplane.pb.gz' | sort)
  [ "$status" = 0 ] && echo "testdata/tpu-synthetic: the committed profiles are the generators'"
  exit "$status"
fi

for need in "$PY" "$REFKIT/xprof_convert.py"; do
  [ -e "$need" ] || { echo "missing $need (set OXPROF_REFKIT_VENV / OXPROF_REFKIT_DIR)" >&2; exit 1; }
done

generate "$OUT"

SCRATCH="$(mktemp -d /tmp/oxprof-tpu-synthetic.XXXXXX)"
trap 'rm -rf "$SCRATCH"' EXIT

# ---- training runs ----
# Tools whose outputs are kept (trace, graph and memory viewers are left out: large or
# not about these profiles' analysis).
KEEP='^(overview_page|input_pipeline_analyzer|framework_op_stats|pod_viewer|op_profile|op_profile\.by_category|hlo_stats|roofline_model|kernel_stats|megascale_stats|perf_counters|utilization_viewer|smart_suggestion|inference_profile|tool_names)\.(json|csv)$'

convert() { # convert RUN_DIR SELECTION DEST FILES...
  local run="$1" selection="$2" dest="$3"
  shift 3
  local logdir="$SCRATCH/$(basename "$run")-$selection"
  mkdir -p "$logdir/plugins/profile/run"
  for f in "$@"; do
    gunzip -c "$f" >"$logdir/plugins/profile/run/$(basename "$f" .gz)"
  done
  "$PY" "$REFKIT/xprof_convert.py" "$logdir" --scratch "$SCRATCH/scratch" >"$logdir.log" 2>&1 \
    || { cat "$logdir.log" >&2; exit 1; }
  rm -rf "$dest"
  mkdir -p "$dest"
  for f in "$logdir/xprof_out/"*; do
    if [[ "$(basename "$f")" =~ $KEEP ]]; then cp "$f" "$dest/"; fi
  done
  echo "$dest: $(ls "$dest" | wc -l) files"
}

for run in "$OUT"/training*/; do
  run="${run%/}"
  mapfile -t files < <(ls "$run"/plugins/profile/*/*.xplane.pb.gz)
  rm -rf "$run/xprof_out"
  if [ "${#files[@]}" = 1 ]; then
    convert "$run" one "$run/xprof_out" "${files[0]}"
  else
    for f in "${files[@]}"; do
      host="$(basename "$f" .xplane.pb.gz)"
      convert "$run" "$host" "$run/xprof_out/$host" "$f"
    done
    convert "$run" ALL_HOSTS "$run/xprof_out/ALL_HOSTS" "${files[@]}"
  fi
  raw="$SCRATCH/$(basename "$run")-opstats"
  mkdir -p "$raw"
  for f in "${files[@]}"; do gunzip -c "$f" >"$raw/$(basename "$f" .gz)"; done
  "$PY" "$ROOT/scripts/ref/xprof-op-stats.py" "$raw" "$raw/out" >"$raw.log" 2>&1 || { cat "$raw.log" >&2; exit 1; }
  gzip -9n -c "$raw/out/ALL_HOSTS.op_stats_v2.json" >"$run/xprof_out/op_stats.json.gz"
done

# ---- counter and megascale runs ----
for case_dir in "$OUT"/counters*/ "$OUT"/megascale*/; do
  case_name="$(basename "$case_dir")"
  logdir="$SCRATCH/$case_name"
  while IFS= read -r gz; do
    rel="${gz#"$case_dir"}"
    mkdir -p "$logdir/$(dirname "$rel")"
    gunzip -c "$gz" > "$logdir/${rel%.gz}"
  done < <(find "$case_dir" -name '*.xplane.pb.gz' | sort)
  run_dir="$(dirname "$(find "$logdir" -name '*.xplane.pb' | head -1)")"
  rm -rf "$case_dir/xprof_out"
  "$VENV/bin/python" "$ROOT/scripts/ref/xprof-tpu-synthetic.py" "$REFKIT" "$run_dir" "$case_dir/xprof_out" \
    > "$SCRATCH/log-$case_name.txt" 2>&1 || { cat "$SCRATCH/log-$case_name.txt"; exit 1; }
  if [[ "$case_name" == megascale* ]]; then
    # XProf's Perfetto trace of each host's DCN collectives (megascale_stats perfetto=true).
    "$VENV/bin/python" "$ROOT/scripts/ref/xprof-tpu-perfetto.py" "$REFKIT" "$run_dir" "$case_dir/xprof_out" \
      > "$SCRATCH/log-perfetto-$case_name.txt" 2>&1 || { cat "$SCRATCH/log-perfetto-$case_name.txt"; exit 1; }
  fi
  echo "$case_name: $(find "$case_dir/xprof_out" -type f | wc -l) XProf outputs"
done

# ---- XProf's Perfetto trace of two third-party profiles (read in place when present) ----
EXT="${OXPROF_EXTERNAL_TESTDATA:-$ROOT/../shared/testdata/external}"
for pair in "openxla-xprof_tpu_inference_2:openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb" \
            "AMD-AGI-TraceLens_934987a2fc2f:AMD-AGI-TraceLens/tests/test_data_jax_te_fused_attn_categorization/934987a2fc2f.xplane.pb"; do
  name="${pair%%:*}"; input="$EXT/${pair#*:}"
  [ -e "$input" ] || { echo "$input absent: its Perfetto trace is not re-recorded"; continue; }
  one="$SCRATCH/external-$name"
  mkdir -p "$one"
  ln -sf "$input" "$one/"
  "$VENV/bin/python" "$ROOT/scripts/ref/xprof-tpu-perfetto.py" "$REFKIT" "$one" "$one/out" > "$one.log" 2>&1 \
    || { cat "$one.log"; exit 1; }
  host="$(basename "$input" .xplane.pb)"
  cp "$one/out/$host/megascale_stats.perfetto.gz" "$ROOT/testdata/external-xprof-counters/$name/"
  echo "$name: XProf's Perfetto trace recorded"
done
