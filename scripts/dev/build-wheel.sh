#!/usr/bin/env bash
# Builds the oxprof wheel into target/wheels/: the `oxprof` command (the native binary,
# installed into the environment's bin/ like ruff's) and the Python package (the abi3
# extension oxprof._oxprof with python/oxprof/), for manylinux_2_28 x86_64: both linked
# against glibc 2.28 with zig (from PyPI), so the wheel installs on any glibc >= 2.28.
# One release build: the binary and the extension share every compiled crate (in
# target/x86_64-unknown-linux-gnu/release).
#   OXPROF_BUILD_VENV=DIR   the build tools' venv (default: <repo>/.venv-build), made and
#                           reused here: maturin and ziglang, pinned
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
TARGET=x86_64-unknown-linux-gnu
GLIBC=2.28
TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
DATA="$PWD/target/wheel-data"

installed="$("$VENV/bin/python" -m pip freeze 2>/dev/null || true)"
if [ "$(grep -cxF -e "${TOOLS[0]}" -e "${TOOLS[1]}" <<<"$installed")" != 2 ]; then
  echo "build-wheel: creating $VENV (${TOOLS[*]})"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${TOOLS[@]}"
fi
# maturin finds zig as `python -m ziglang` of the first python on PATH.
export PATH="$VENV/bin:$PATH"

# Both builds go through maturin with the same zig linker wrapper: cargo fingerprints the
# linker, so this way the second build reuses every crate the first compiled.
maturin=(maturin build --release --locked --zig --target "$TARGET" --compatibility "manylinux_${GLIBC/./_}")
# glibc 2.28's loader does not read packed relocations (DT_RELR, glibc >= 2.36): the
# binary's build.rs leaves them out under zig anyway; this says so, and is checked below.
export OXPROF_PACK_RELOCS=0

rm -rf "$DATA" target/wheel-bin
mkdir -p "$DATA"
if [ -n "${OXPROF_PREBUILT_BIN:-}" ]; then
  echo "build-wheel: the oxprof binary from $OXPROF_PREBUILT_BIN (not built)"
  binary="$OXPROF_PREBUILT_BIN"
else
  echo "build-wheel: the oxprof binary (release, $TARGET, glibc $GLIBC)"
  # Built as maturin's `bin` wheel of crates/oxprof, which is thrown away: only the binary
  # (stripped) is kept, for the data directory pyproject.toml names (empty meanwhile).
  "${maturin[@]}" -m crates/oxprof/Cargo.toml -b bin --out target/wheel-bin
  rm -rf target/wheel-bin
  binary="$TARGET_DIR/$TARGET/release/oxprof"
fi
if command -v readelf > /dev/null && readelf -d "$binary" | grep -q '(RELR)'; then
  echo "build-wheel: $binary has packed relocations (DT_RELR): glibc $GLIBC could not load it" >&2
  exit 1
fi
mkdir -p "$DATA/scripts"
cp "$binary" "$DATA/scripts/oxprof"

echo "build-wheel: the wheel (the extension module, the binary in its scripts)"
rm -f target/wheels/oxprof-*.whl
"${maturin[@]}" --out target/wheels
ls -l target/wheels/oxprof-*.whl
