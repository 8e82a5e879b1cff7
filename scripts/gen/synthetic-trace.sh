#!/usr/bin/env bash
# Writes a synthetic XSpace for trace-viewer benchmarks (default: 50 M events, ~0.7 GB):
#   scripts/gen/synthetic-trace.sh [OUT_DIR] [EVENTS]
# OUT_DIR gets plugins/profile/synthetic/synthetic.xplane.pb (a loadable log directory).
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-bench-data/synthetic}"
events="${2:-50000000}"
mkdir -p "$out/plugins/profile/synthetic"
cargo run --release -p oxprof-api --example gen_synthetic_trace -- \
  "$out/plugins/profile/synthetic/synthetic.xplane.pb" "$events"
