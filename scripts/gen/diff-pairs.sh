#!/usr/bin/env bash
# Make the real profile pairs of `oxprof diff`'s tests under testdata/diff/ (gzip-compressed,
# committed; see testdata/README.md):
#
#   testdata/diff/slow_b32    input-bound pipeline, batch 32
#   testdata/diff/fast_b32    the fixed pipeline, batch 32   (vs slow_b32: input-bound vs fixed)
#   testdata/diff/fast_b128   the fixed pipeline, batch 128  (vs fast_b32: batch size)
#
# each from scripts/gen/diff-pair.py (TensorFlow on CPU, 30 steps, BFC allocator events).
#
#   scripts/gen/diff-pairs.sh            # does nothing for a folder that already exists
#   scripts/gen/diff-pairs.sh --force    # regenerate all three
#
# Environment: OXPROF_REFKIT_VENV   Python venv with tensorflow (default:
# ~/.cache/oxprof-refkit/venv, the refkit's; see ../shared/refkit/README.md).
# About 20 s per profile on 2 cores.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${OXPROF_REFKIT_VENV:-$HOME/.cache/oxprof-refkit/venv}"
PY="$VENV/bin/python"

force=0
for arg in "$@"; do
  case "$arg" in
    --force | -f) force=1 ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $arg (usage: $0 [--force])" >&2; exit 2 ;;
  esac
done
if [ ! -x "$PY" ]; then
  echo "no Python venv at $VENV (set OXPROF_REFKIT_VENV; the refkit's make_all.sh creates it)" >&2
  exit 1
fi

make_one() {
  local name="$1" pipeline="$2" batch="$3"
  local out="$ROOT/testdata/diff/$name"
  if [ -d "$out" ] && [ "$force" = 0 ]; then
    echo "$out exists; skipped (use --force to regenerate)"
    return
  fi
  local tmp
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/oxprof-diffpair.XXXXXX")"
  echo "=== $name: --pipeline $pipeline --batch $batch"
  "$PY" "$ROOT/scripts/gen/diff-pair.py" --pipeline "$pipeline" --batch "$batch" --logdir "$tmp"
  mapfile -t found < <(find "$tmp" -type f -name '*.xplane.pb' | sort)
  if [ "${#found[@]}" -ne 1 ]; then
    echo "expected one .xplane.pb under $tmp, found ${#found[@]}" >&2
    exit 1
  fi
  # <logdir>/plugins/profile/<run>/<host>.xplane.pb, the host named vm as in testdata/profiles.
  local run
  run="$(basename "$(dirname "${found[0]}")")"
  rm -rf "$out"
  mkdir -p "$out/plugins/profile/$run"
  gzip -9 -n -c "${found[0]}" > "$out/plugins/profile/$run/vm.xplane.pb.gz"
  rm -rf "$tmp"
  echo "wrote $out/plugins/profile/$run/vm.xplane.pb.gz ($(stat -c %s "$out/plugins/profile/$run/vm.xplane.pb.gz") bytes)"
}

make_one slow_b32 slow 32
make_one fast_b32 fast 32
make_one fast_b128 fast 128
