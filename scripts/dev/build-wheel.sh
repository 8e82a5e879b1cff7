#!/usr/bin/env bash
# Builds the oxprof wheel into target/wheels/: the `oxprof` command (the native binary,
# installed into the environment's bin/ like ruff's) and the Python package (the abi3
# extension oxprof._oxprof with python/oxprof/), for manylinux_2_28: both linked against
# glibc 2.28 with zig (from PyPI), so the wheel installs on any glibc >= 2.28.
# It is `pip wheel .`: pyproject.toml's backend (python/_build_backend.py) builds the binary
# and then the extension with the same flags (one release build: they share every
# compiled crate, in target/x86_64-unknown-linux-gnu/release) and checks the binary; here
# the build tools come from a venv kept between runs instead of pip's isolated one.
#   OXPROF_BUILD_VENV=DIR   the build tools' venv (default: <repo>/.venv-build), made and
#                           reused here: maturin and ziglang, pinned as pyproject.toml and
#                           the backend pin them
#   PYTHON=python3          the interpreter that creates it
#   PIP_CACHE_DIR           pip's cache (pip's default: ~/.cache/pip)
#   OXPROF_PREBUILT_BIN=F   put this `oxprof` binary in the wheel instead of building one (a
#                           developer's shortcut when only the extension changed: it must be a
#                           release build of the same tree for manylinux_2_28; CI never sets it)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VENV="${OXPROF_BUILD_VENV:-$PWD/.venv-build}"
PYTHON="${PYTHON:-python3}"
TOOLS=(maturin==1.16.0 ziglang==0.17.0)

installed="$("$VENV/bin/python" -m pip freeze 2>/dev/null || true)"
if [ "$(grep -cxF -e "${TOOLS[0]}" -e "${TOOLS[1]}" <<<"$installed")" != 2 ]; then
  echo "build-wheel: creating $VENV (${TOOLS[*]})"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${TOOLS[@]}"
fi

echo "build-wheel: pip wheel . (manylinux_2_28 with zig; python/_build_backend.py)"
rm -f target/wheels/oxprof-*.whl
# -v: the backend's and cargo's progress (pip shows nothing of a build without it).
PATH="$VENV/bin:$PATH" "$VENV/bin/python" -m pip wheel . -v --no-build-isolation --no-deps \
  --disable-pip-version-check --config-settings oxprof.zig=true --wheel-dir target/wheels
ls -l target/wheels/oxprof-*.whl
