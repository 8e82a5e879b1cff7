#!/usr/bin/env bash
# Builds the wheel (scripts/dev/build-wheel.sh: release, manylinux_2_28), installs it into a
# fresh venv with python/requirements-test.txt, and runs python/tests against the
# installed package and command (never the source tree): the CLI from the wheel serves
# the demo, tables equal `oxprof data` on testdata/profiles, dtypes, errors, serve(),
# threads, and the example notebook headless (nbclient).
#   OXPROF_WHEEL_VENV=DIR   the test venv, made afresh (default: <repo>/target/venv-wheel-test)
#   PYTHON=python3          the interpreter that creates it
#   PIP_CACHE_DIR           pip's cache of downloaded wheels (pip's default: ~/.cache/pip)
#   PYTEST_ARGS="..."       extra pytest arguments (e.g. -k serve)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VENV="${OXPROF_WHEEL_VENV:-$PWD/target/venv-wheel-test}"
PYTHON="${PYTHON:-python3}"

bash scripts/dev/build-wheel.sh
wheels=(target/wheels/oxprof-*.whl)
[ "${#wheels[@]}" -eq 1 ] || { echo "test-python: expected one wheel, found ${wheels[*]}" >&2; exit 1; }

echo "test-python: a fresh venv in $VENV"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
pip=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
"${pip[@]}" -r python/requirements-test.txt
"${pip[@]}" "${wheels[0]}"

echo "test-python: pytest"
# From python/tests, so that `import oxprof` can only find the installed package.
cd python/tests
# The CLI's persistent analysis cache: a fresh one, not the user's.
cache_dir="$(mktemp -d)"
trap 'rm -rf "$cache_dir"' EXIT
# shellcheck disable=SC2086
OXPROF_CACHE_DIR="$cache_dir" OXPROF_REPO="$OLDPWD" "$VENV/bin/python" -m pytest -q -p no:cacheprovider ${PYTEST_ARGS:-} .
