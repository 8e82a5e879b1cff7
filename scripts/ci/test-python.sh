#!/usr/bin/env bash
# Builds the wheel (scripts/dev/build-wheel.sh: `pip wheel .`, manylinux_2_28; the cargo
# profile OXPROF_WHEEL_PROFILE names, release by default, and scripts/test.sh's wheel-ci),
# installs it into a fresh venv with python/requirements-test.txt, and runs python/tests
# against the installed package and command (never the source tree): the CLI from the wheel
# serves the demo, tables equal `oxprof data` on testdata/profiles, dtypes, errors, serve(),
# threads, TensorBoard's oxprof tab, and the example notebook headless (nbclient). Then:
# - the sdist holds what its wheel's build needs (scripts/ci/check-sdist.py);
# - `pip install .` into another fresh venv, as a user runs it (pip's isolated build
#   environment; no target/wheel-data, no build venv), installs a working `oxprof` and
#   package: it reuses the wheel build's crates (same target dir and flags), so it only
#   packs (its time is printed; a crate compiled again fails the test);
# - real TensorBoard (PyPI) shows the oxprof tab in chromium with the overview's numbers
#   (scripts/ci/tensorboard-tab-check.py; needs ui/node_modules and /usr/bin/chromium).
#   OXPROF_WHEEL_VENV=DIR   the test venv, made afresh (default: <repo>/target/venv-wheel-test)
#   PYTHON=python3          the interpreter that creates it
#   PIP_CACHE_DIR           pip's cache of downloaded wheels (pip's default: ~/.cache/pip)
#   PYTEST_ARGS="..."       extra pytest arguments (e.g. -k serve)
#   SKIP_TENSORBOARD_BROWSER=1  skip the browser check of the tab
#   OXPROF_WHEEL_BUILT=1    the wheel in target/wheels is this tree's (scripts/test.sh builds it
#                           beside other steps): do not build it again
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VENV="${OXPROF_WHEEL_VENV:-$PWD/target/venv-wheel-test}"
PYTHON="${PYTHON:-python3}"

# OXPROF_WHEEL_BUILT=1: scripts/test.sh built it already (in the background, beside other steps).
[ "${OXPROF_WHEEL_BUILT:-0}" = 1 ] || bash scripts/dev/build-wheel.sh
wheels=(target/wheels/oxprof-*.whl)
[ "${#wheels[@]}" -eq 1 ] || { echo "test-python: expected one wheel, found ${wheels[*]}" >&2; exit 1; }

echo "test-python: a fresh venv in $VENV"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
pip=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
"${pip[@]}" -r python/requirements-test.txt
"${pip[@]}" "${wheels[0]}"

echo "test-python: pytest"
# The CLI's persistent analysis cache: a fresh one, not the user's.
cache_dir="$(mktemp -d)"
scratch="$(mktemp -d)"
trap 'rm -rf "$cache_dir" "$scratch"' EXIT
# From python/tests, so that `import oxprof` can only find the installed package.
# shellcheck disable=SC2086
(cd python/tests && OXPROF_CACHE_DIR="$cache_dir" OXPROF_REPO="$OLDPWD" "$VENV/bin/python" -m pytest -q -p no:cacheprovider ${PYTEST_ARGS:-} .)

echo "test-python: the sdist"
# Through the backend's hook, with the build venv's maturin (what `python -m build --sdist` calls).
build_venv="${OXPROF_BUILD_VENV:-$PWD/.venv-build}"
PATH="$build_venv/bin:$PATH" "$build_venv/bin/python" -c \
  'import sys; sys.path.insert(0, "python"); import _build_backend as b; b.build_sdist(sys.argv[1])' "$scratch/sdist" \
  > "$scratch/sdist.log" 2>&1 || { cat "$scratch/sdist.log" >&2; exit 1; }
"$PYTHON" scripts/ci/check-sdist.py "$scratch"/sdist/oxprof-*.tar.gz

echo "test-python: pip install . into a fresh venv"
rm -rf target/wheel-data "$scratch/venv"
"$PYTHON" -m venv "$scratch/venv"
start=$(date +%s)
# pip makes its isolated build environment from pyproject.toml (maturin, ziglang).
"$scratch/venv/bin/python" -m pip install -v --disable-pip-version-check . > "$scratch/pip-install.log" 2>&1 \
  || { tail -50 "$scratch/pip-install.log" >&2; exit 1; }
compiled=$(grep -c ' Compiling ' "$scratch/pip-install.log" || true)
echo "test-python: pip install . took $(( $(date +%s) - start )) s, $compiled crates compiled"
if [ "$compiled" != 0 ]; then
  grep ' Compiling ' "$scratch/pip-install.log" | head -20 >&2
  echo "test-python: pip install . recompiled what the wheel's build compiled (other flags or linker?)" >&2
  exit 1
fi
"$scratch/venv/bin/oxprof" --version
cmp "$scratch/venv/bin/oxprof" "$VENV/bin/oxprof" \
  || { echo "test-python: pip install . installed another oxprof binary than the wheel's" >&2; exit 1; }
(cd "$scratch" && OXPROF_CACHE_DIR="$cache_dir" "$scratch/venv/bin/python" -c '
import sys, oxprof
profile = oxprof.open(sys.argv[1])
assert profile.runs, profile
print(f"test-python: pip install . gives oxprof {oxprof.__version__}, runs {profile.runs}")
' "$OLDPWD/testdata/profiles/jax_train")

if [ "${SKIP_TENSORBOARD_BROWSER:-0}" != "1" ]; then
  echo "test-python: TensorBoard's oxprof tab in chromium"
  [ -d ui/node_modules/playwright-core ] || (cd ui && npm ci --no-audit --no-fund)
  bash scripts/ci/setup-chromium.sh
  OXPROF_CACHE_DIR="$cache_dir" timeout 600 "$VENV/bin/python" scripts/ci/tensorboard-tab-check.py
fi
