#!/usr/bin/env bash
# Runs everything CI runs: formatting, lints, all tests, and a bounded fuzz smoke run.
# Works on a fresh machine with only the Rust toolchain; installs what it needs itself.
#   FUZZ_SECONDS=60   length of the fuzz smoke run (0 skips it)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
step() { printf '\n=== %s (%s)\n' "$*" "$(date +%H:%M:%S)"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test"
cargo test --workspace --locked

if [ "${FUZZ_SECONDS:-60}" != "0" ]; then
  step "fuzz smoke (${FUZZ_SECONDS:-60} s)"
  bash scripts/fuzz-smoke.sh
fi
step "all checks passed"
