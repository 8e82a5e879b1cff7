#!/usr/bin/env bash
# Make the large real benchmark profile bench-data/jax_large.xplane.pb (about 85 MB,
# 3 M events) with the refkit's gen_jax_large.py (a 1,500-step JAX run on CPU).
#
#   scripts/gen/large-profile.sh            # does nothing if the file already exists
#   scripts/gen/large-profile.sh --force    # regenerate it
#
# Works from any directory. Environment:
#   OXPROF_REFKIT        refkit folder (default: <repo>/../shared/refkit)
#   OXPROF_REFKIT_VENV   Python venv with jax/tensorflow/xprof (default:
#                        ~/.cache/oxprof-refkit/venv); created from the refkit's
#                        requirements-lock.txt when missing (a few GB of wheels)
#   REFKIT_LARGE_STEPS   steps to profile (default 1500, read by gen_jax_large.py)
#   OXPROF_LARGE_PROFILE_OUT  where to write it (default bench-data/jax_large.xplane.pb;
#                        scripts/bench/diff.sh wants a second run as jax_large_b.xplane.pb)
# Generating takes about 45 s and 2.4 GB of RAM on 2 cores.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
REFKIT="${OXPROF_REFKIT:-$ROOT/../shared/refkit}"
VENV="${OXPROF_REFKIT_VENV:-$HOME/.cache/oxprof-refkit/venv}"
OUT="${OXPROF_LARGE_PROFILE_OUT:-$ROOT/bench-data/jax_large.xplane.pb}"

force=0
for arg in "$@"; do
  case "$arg" in
    --force | -f) force=1 ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $arg (usage: $0 [--force])" >&2; exit 2 ;;
  esac
done

if [ -f "$OUT" ] && [ "$force" = 0 ]; then
  echo "$OUT exists ($(stat -c %s "$OUT") bytes); nothing to do (use --force to regenerate)"
  exit 0
fi

if [ ! -f "$REFKIT/gen_jax_large.py" ] || [ ! -f "$REFKIT/requirements-lock.txt" ]; then
  echo "refkit not found at $REFKIT (set OXPROF_REFKIT)" >&2
  exit 1
fi
REFKIT="$(cd "$REFKIT" && pwd)"

PY="$VENV/bin/python"
if [ ! -x "$PY" ]; then
  echo "=== creating venv $VENV from $REFKIT/requirements-lock.txt"
  mkdir -p "$(dirname "$VENV")"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q -r "$REFKIT/requirements-lock.txt"
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/oxprof-genlarge.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

echo "=== running gen_jax_large.py (REFDATA=$TMP)"
# gen_jax_large.py imports _common from its own folder (Python puts the script's folder
# on sys.path), and writes $REFDATA/jax_large/plugins/profile/<ts>/<host>.xplane.pb.
timer=()
[ -x /usr/bin/time ] && timer=(/usr/bin/time -f "    wall %e s, peak RSS %M KB")
(cd "$TMP" && REFDATA="$TMP" TF_CPP_MIN_LOG_LEVEL=2 PYTHONHASHSEED=1234 \
  "${timer[@]}" "$PY" "$REFKIT/gen_jax_large.py")

mapfile -t found < <(find "$TMP/jax_large" -type f -name '*.xplane.pb' | sort)
if [ "${#found[@]}" -ne 1 ]; then
  echo "expected exactly one .xplane.pb under $TMP/jax_large, found ${#found[@]}: ${found[*]:-}" >&2
  exit 1
fi

mkdir -p "$(dirname "$OUT")"
cp "${found[0]}" "$OUT.tmp.$$"
mv -f "$OUT.tmp.$$" "$OUT"
echo "wrote $OUT ($(stat -c %s "$OUT") bytes)"
