#!/usr/bin/env bash
# The web UI's checks: npm ci, lint, type check, unit tests, the check that ui/dist is
# what the sources build to, then end-to-end tests in Debian's chromium (playwright-core)
# against the real `oxprof serve` (built here with cargo) on the committed profiles.
# The e2e runner starts its servers on 127.0.0.1 with free ports (--port 0) and stops them.
# Screenshots: ui/e2e-artifacts/ (gitignored).
#   SKIP_E2E=1   run everything but the browser tests
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
step() { printf '\n=== %s (%s)\n' "$*" "$(date +%H:%M:%S)"; }

node_ok=$(node -e 'const [a,b]=process.versions.node.split(".").map(Number); console.log(a>20||(a===20&&b>=19)?1:0)' 2>/dev/null || echo 0)
if [ "$node_ok" != "1" ]; then
  echo "test-ui: Node.js >= 20.19 is needed (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

step "ui: npm ci"
(cd ui && npm ci --no-audit --no-fund --loglevel=error)

step "ui: lint and type check"
(cd ui && npm run --silent lint && npm run --silent typecheck)

step "ui: unit tests"
(cd ui && npm run --silent test)

step "ui: ui/dist is reproduced from the sources"
(cd ui && node scripts/check-dist.mjs)

if [ "${SKIP_E2E:-0}" = "1" ]; then
  step "ui: e2e skipped (SKIP_E2E=1)"
  exit 0
fi

step "ui: chromium"
bash scripts/ci/setup-chromium.sh

step "ui: build oxprof and the pod generator (the 256-host suite's)"
cargo build -p oxprof --locked
# --workspace: the features `cargo test --workspace` built with (a no-op after it).
cargo build --workspace --locked --example gen_pod
target_dir=$(cargo metadata --format-version 1 --no-deps | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).target_directory))')

step "ui: end-to-end tests (chromium + oxprof serve)"
OXPROF_BIN="$target_dir/debug/oxprof" OXPROF_GEN_POD="$target_dir/debug/examples/gen_pod" node ui/e2e/run.mjs
