#!/usr/bin/env bash
# Creates the venv of the MCP end-to-end check (scripts/ci/mcp-client-check.py): the official
# MCP Python SDK from PyPI, pinned. Reuses the venv when it already has the pinned version.
#   OXPROF_MCP_VENV=DIR   where the venv goes (default: ~/.cache/oxprof-ci/mcp-venv)
#   PYTHON=python3        the interpreter that creates it (3.10 or newer)
# Prints the venv's python on its last line.
set -euo pipefail
MCP_VERSION=2.3.0
VENV="${OXPROF_MCP_VENV:-$HOME/.cache/oxprof-ci/mcp-venv}"
PYTHON="${PYTHON:-python3}"

if [ -x "$VENV/bin/python" ] &&
   "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" 2>/dev/null; then
  echo "setup-mcp-client: $VENV already has mcp $MCP_VERSION" >&2
else
  echo "setup-mcp-client: creating $VENV with mcp $MCP_VERSION" >&2
  mkdir -p "$(dirname "$VENV")"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_VERSION" >&2
fi
echo "$VENV/bin/python"
