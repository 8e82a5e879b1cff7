#!/usr/bin/env bash
# The registry's promise, end to end: a tool added by one module and one row
# (crates/oxprof-api/src/example_tool.rs, the `example-tool` feature, never in a release)
# reaches the CLI's help and output, HTTP, Python and the UI's Tools menu with no other
# change. Builds oxprof and the extension module with the feature (debug, beside the
# everyday build: only oxprof-api and what depends on it recompile), then runs
# scripts/ci/example-tool-check.py (CLI, HTTP, Python) and ui/e2e/example_tool.mjs
# (chromium). Needs what scripts/ci/test-ui.sh installs (ui/node_modules, chromium).
#   SKIP_E2E=1   leave out the browser check
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
out="$target_dir/example-tool"

echo "example tool: building oxprof and the extension module with --features oxprof-api/example-tool"
# PYO3_BUILD_EXTENSION_MODULE: an extension module leaves libpython's symbols to the
# interpreter that loads it (what maturin sets for the wheel).
PYO3_BUILD_EXTENSION_MODULE=1 cargo build --locked -p oxprof -p oxprof-python --features oxprof-api/example-tool
mkdir -p "$out"
cp "$target_dir/debug/oxprof" "$out/oxprof"
cp "$target_dir/debug/lib_oxprof.so" "$out/_oxprof.abi3.so"
# The feature's build replaced target/debug/oxprof: the everyday one back (nothing recompiles).
cargo build --locked -p oxprof

python3 scripts/ci/example-tool-check.py --bin "$out/oxprof" --extension "$out/_oxprof.abi3.so"
if [ "${SKIP_E2E:-0}" != "1" ]; then
  bash scripts/ci/setup-chromium.sh
  [ -d ui/node_modules ] || (cd ui && npm ci --no-audit --no-fund --loglevel=error)
  OXPROF_BIN="$out/oxprof" node ui/e2e/example_tool.mjs
fi
rm -rf "$out"
