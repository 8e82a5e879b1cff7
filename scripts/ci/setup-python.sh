#!/usr/bin/env bash
# Creates the Python virtual environment of oxprof's live-capture tests: JAX (CPU) from
# PyPI, pinned. Reuses the venv when it already has the pinned version (a few seconds).
#   OXPROF_PYTHON_VENV=DIR   where the venv goes (default: <repo>/.venv-test)
#   PYTHON=python3           the interpreter that creates it
# The tests (crates/oxprof/tests/live_capture.rs) look for it in the same place; they
# skip without it unless OXPROF_REQUIRE_LIVE=1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
JAX_VERSION=0.10.2
VENV="${OXPROF_PYTHON_VENV:-$PWD/.venv-test}"
PYTHON="${PYTHON:-python3}"

if [ -x "$VENV/bin/python" ] &&
   "$VENV/bin/python" -c "import jax, sys; sys.exit(jax.__version__ != '$JAX_VERSION')" 2>/dev/null; then
  echo "setup-python: $VENV already has jax $JAX_VERSION"
  exit 0
fi

echo "setup-python: creating $VENV with jax $JAX_VERSION (CPU)"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "jax==$JAX_VERSION" "jaxlib==$JAX_VERSION"
"$VENV/bin/python" -c "import jax; print('setup-python: jax', jax.__version__, 'devices', jax.devices())"
