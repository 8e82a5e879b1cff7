#!/usr/bin/env bash
# Runs everything CI runs: formatting, lints, all Rust tests (including live captures from
# a real JAX program), the web UI's checks and browser tests, and bounded fuzz smoke runs.
# Works on a fresh machine with the Rust toolchain, Python 3.11 with pip and Node 20 with
# npm; installs the rest itself (a JAX venv in .venv-test, Debian's chromium, maturin and
# zig from PyPI for the wheel).
#   FUZZ_SECONDS=60   length of each fuzz smoke run (0 skips them)
#   SKIP_LIVE=1       skip the live-capture tests (no Python venv)
#   SKIP_UI=1         skip the web UI's checks
#   SKIP_PYTHON=1     skip the Python wheel's build and tests (scripts/ci/test-python.sh)
#   SKIP_OBJSTORE=1   skip the object-store tests against real S3/Azure servers
#   SKIP_LOAD=1       skip the 64-client load test of the wheel's server (scripts/ci/load-serve.py)
#   SKIP_DOCS=1       skip building the manual and checking its links (scripts/ci/check-docs.sh)
#   SKIP_MCP=1        skip driving `oxprof mcp` with the official MCP Python SDK (scripts/ci/mcp-client-check.py; venv cached)
#   SKIP_SQL_READERS=1 skip DuckDB/Spark reading the Parquet export (scripts/ci/test-sql-readers.sh; ~6 min, venv cached)
#   SKIP_SPARK_POD=1  skip the pod job on a 2-worker Spark cluster reading S3 (scripts/ci/test-spark-pod.sh)
#   OXPROF_WHEEL_PROFILE=wheel-ci  the cargo profile of the wheel under test (release: as shipped)
#   OXPROF_FREE_DISK=1 delete each step's build products once no later step needs them
#                     (.ci/run sets it: the CI disk is shared, and a full one failed a run)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Each step's header says when it started (seconds into the run); the run ends, passed,
# failed or stopped, with every step's duration, so the end of a CI log shows where time went.
run_start=$(date +%s) step_name="" step_start=$run_start step_times=()
step() {
  local now
  now=$(date +%s)
  [ -z "$step_name" ] || step_times+=("$(printf '%6d s  %s' $((now - step_start)) "$step_name")")
  step_name="$*" step_start=$now
  printf '\n=== %s (%s, %d s in, %s free)\n' "$*" "$(date +%H:%M:%S)" $((now - run_start)) \
    "$(df -h --output=avail . | tail -1 | tr -d ' ')"
}
# The background builds' process group (see below); none until they start.
background="" background_pid=""
on_exit() {
  local status=$? now
  now=$(date +%s)
  if [ -n "$background_pid" ]; then
    kill -- "-$background_pid" 2>/dev/null || true
    wait "$background_pid" 2>/dev/null || true
  fi
  [ -z "$background" ] || rm -rf "$background"
  printf '\n=== step times (exit %d after %d s)\n' "$status" $((now - run_start))
  printf '%s\n' "${step_times[@]}"
  [ -z "$step_name" ] || printf '%6d s  %s%s\n' $((now - step_start)) "$step_name" \
    "$([ "$step_name" = "all checks passed" ] || echo '  <- running at exit')"
  exit "$status"
}
trap on_exit EXIT
trap 'exit 143' TERM INT
# Deletes the named build products when OXPROF_FREE_DISK=1 (never on a developer's tree).
free_disk() {
  [ "${OXPROF_FREE_DISK:-0}" = 1 ] || return 0
  echo "free disk: deleting $*"
  rm -rf -- "$@"
}

step "cargo fmt --check"
cargo fmt --all -- --check

if [ "${SKIP_DOCS:-0}" != "1" ]; then
  step "manual: mdbook build (warnings as errors) and offline link check (tools cached)"
  bash scripts/ci/check-docs.sh
fi

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

if [ "${SKIP_LIVE:-0}" != "1" ]; then
  step "python venv with JAX for the live-capture tests"
  bash scripts/ci/setup-python.sh
  export OXPROF_REQUIRE_LIVE=1
fi

step "cargo test"
cargo test --workspace --locked
# The test executables (GBs of them) are not used again: later steps need the libraries
# and target/debug/oxprof, which stay.
if [ "${OXPROF_FREE_DISK:-0}" = 1 ]; then
  mapfile -t test_executables < <(cargo test --workspace --locked --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["profile"]["test"] and m.get("executable"):
        print(m["executable"])')
  free_disk "${test_executables[@]}"
fi

# Builds that do not need the steps between run beside them, in one background chain: the
# wheel (the longest step), then the fuzz targets. The steps beside it use the CPU too (a
# browser, two small builds), so the overlap gains minutes, not the build's length. Each
# build's log and time are shown where its result is needed (join), and a failing step stops
# the chain (its own process group).
# CI's wheel is built with the wheel-ci profile (Cargo.toml): the release profile's fat LTO
# with one codegen unit took 32 of a cold run's 61 minutes, and CI tests the package, not the
# shipped binary's speed. OXPROF_WHEEL_PROFILE=release tests the wheel as shipped.
export OXPROF_WHEEL_PROFILE="${OXPROF_WHEEL_PROFILE:-wheel-ci}"
if [ "${SKIP_PYTHON:-0}" != "1" ]; then
  background="$(mktemp -d)"
  step "background builds start: the wheel (scripts/dev/build-wheel.sh, profile $OXPROF_WHEEL_PROFILE), then the fuzz targets (logs shown at their steps)"
  setsid bash -c 'trap "exit 143" TERM
    t0=$(date +%s)
    bash scripts/dev/build-wheel.sh >"$1/wheel.log" 2>&1; status=$?
    echo $(($(date +%s) - t0)) >"$1/wheel.secs"; echo $status >"$1/wheel.rc"
    t0=$(date +%s)
    if [ "$2" != 0 ]; then
      FUZZ_BUILD_ONLY=1 bash scripts/ci/fuzz-smoke.sh &&
        FUZZ_BUILD_ONLY=1 FUZZ_TARGET=import_kineto bash scripts/ci/fuzz-smoke.sh
    fi >"$1/fuzz.log" 2>&1; status=$?
    echo $(($(date +%s) - t0)) >"$1/fuzz.secs"; echo $status >"$1/fuzz.rc"' _ "$background" "${FUZZ_SECONDS:-60}" &
  background_pid=$!
fi
# Waits for background build NAME, shows its log (without cargo's "Compiling" lines) and
# time, and fails the run if it failed. Nothing to wait for when there is no background chain.
join_background() {
  [ -n "$background" ] || return 0
  local waited=$SECONDS
  while [ ! -s "$background/$1.rc" ]; do
    kill -0 "$background_pid" 2>/dev/null || [ -s "$background/$1.rc" ] ||
      { cat "$background/$1.log" 2>/dev/null; echo "test: the background builds ended without $1's result" >&2; exit 1; }
    sleep 2
  done
  grep -v '^ *Compiling ' "$background/$1.log" || true
  waited=$((SECONDS - waited))
  echo "test: background build $1 took $(cat "$background/$1.secs") s; this step waited $waited s for it"
  step_times+=("$(printf '%6d s  (background) %s, waited for: %d s' "$(cat "$background/$1.secs")" "$1" "$waited")")
  [ "$(cat "$background/$1.rc")" = 0 ] || { echo "test: the background build $1 failed (above)" >&2; exit 1; }
}

step "synthetic TPU profiles: testdata/tpu-synthetic is what its generators write"
bash scripts/gen/tpu-synthetic.sh --check

step "explain's evaluation set: testdata/explain is what its generator writes"
python3 scripts/gen/explain-evalset.py --check

step "Perfetto traces (megascale_stats perfetto=true) read with Perfetto's schema (venv cached)"
bash scripts/ci/check-perfetto-trace.sh

step "PyTorch views' goldens: torch-tb-profiler 0.4.3 reproduces testdata/torch-tb (venv cached)"
bash scripts/ref/torch-tb.sh --check

if [ "${SKIP_OBJSTORE:-0}" != "1" ]; then
  step "object-store logdirs against real servers (SeaweedFS S3, Azurite, HTTP)"
  bash scripts/ci/test-objstore.sh
fi

step "model check of the single-flight cache (loom)"
# A target directory of its own: --cfg loom changes how its dependencies build.
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom" \
  cargo test -p oxprof-flight --release --locked --test loom
free_disk "${CARGO_TARGET_DIR:-target}/loom"

if [ "${SKIP_UI:-0}" != "1" ]; then
  step "web UI"
  bash scripts/ci/test-ui.sh
  step "one module and one row: a test tool reaches the CLI, HTTP, Python and the UI's Tools menu"
  bash scripts/ci/test-example-tool.sh
fi

if [ "${SKIP_PYTHON:-0}" != "1" ]; then
  step "Python wheel: pip wheel . ($OXPROF_WHEEL_PROFILE), install into a fresh venv, pytest, example notebook, sdist, pip install ., TensorBoard's tab"
  join_background wheel
  OXPROF_WHEEL_BUILT=1 bash scripts/ci/test-python.sh
fi

# Hostile input against an optimised server: the wheel's binary as its test venv installed it
# (no second optimised build; maturin moves cargo's own copy away), or cargo test's debug
# binary when the wheel was skipped.
oxprof_bin="${OXPROF_WHEEL_VENV:-target/venv-wheel-test}/bin/oxprof"
[ -x "$oxprof_bin" ] || oxprof_bin=target/debug/oxprof
echo "test: the fuzz, load and MCP steps run $oxprof_bin"
if [ "${FUZZ_SECONDS:-60}" != "0" ]; then
  step "fuzz smoke: SQL grammar against $oxprof_bin under an RSS watchdog (${FUZZ_SECONDS:-60} s)"
  python3 scripts/ci/sql-fuzz-smoke.py --bin "$oxprof_bin" --seconds "${FUZZ_SECONDS:-60}"
fi
if [ "${SKIP_LOAD:-0}" != "1" ]; then
  step "load: 64 clients for 60 s, SQL and a hostile object store mixed in, --cache-mb 64 ($oxprof_bin)"
  python3 scripts/ci/load-serve.py --bin "$oxprof_bin" --clients 64 --seconds 60 --cache-mb 64
fi
if [ "${SKIP_MCP:-0}" != "1" ]; then
  step "MCP: the official Python SDK's client drives oxprof mcp (stdio and HTTP) against the CLI's JSON ($oxprof_bin)"
  mcp_python=$(bash scripts/ci/setup-mcp-client.sh | tail -1)
  "$mcp_python" scripts/ci/mcp-client-check.py --bin "$oxprof_bin"
fi
if [ "${SKIP_SPARK_POD:-0}" != "1" ]; then
  step "pods on Spark: oxprof.spark on a 2-worker standalone cluster on 127.0.0.1, 256 hosts read from S3, ALL_HOSTS answers byte-identical to one machine ($oxprof_bin)"
  # Per-host memory: issue 42's 1.5x is held on the test's two 16 MB hosts (their own job).
  # On the 256 hosts of 0.5 MB, 1.5x is 0.75 MB of slack, below the noise of a process's RSS
  # (±3 MB between runs of the same host): there the bound is a regression bound (~7x
  # measured). The measured factors are printed either way.
  OXPROF_BIN="$oxprof_bin" SPARK_POD_RSS_FACTOR=${SPARK_POD_RSS_FACTOR:-24} bash scripts/ci/test-spark-pod.sh
fi
# The optimised build behind the wheel (the wheel itself stays in target/wheels).
free_disk target/x86_64-unknown-linux-gnu target/release target/venv-wheel-test target/oxprof-build

if [ "${SKIP_SQL_READERS:-0}" != "1" ]; then
  step "SQL: DuckDB and Spark read oxprof's Parquet export; the Spark pod script equals oxprof query"
  bash scripts/ci/test-sql-readers.sh
fi

if [ "${FUZZ_SECONDS:-60}" != "0" ]; then
  join_background fuzz # built in the background
  if [ -z "$background" ]; then # nothing built them ahead: one after the other (one cargo-fuzz install)
    FUZZ_BUILD_ONLY=1 bash scripts/ci/fuzz-smoke.sh
    FUZZ_BUILD_ONLY=1 FUZZ_TARGET=import_kineto bash scripts/ci/fuzz-smoke.sh
  fi
  # libFuzzer runs on one core: the two smokes run side by side, each with its own log.
  step "fuzz smokes side by side: XSpace decoder and PyTorch trace importer (${FUZZ_SECONDS:-60} s each)"
  smokes="$(mktemp -d)"
  bash scripts/ci/fuzz-smoke.sh >"$smokes/decode_xspace.log" 2>&1 &
  xspace_smoke=$!
  FUZZ_TARGET=import_kineto bash scripts/ci/fuzz-smoke.sh >"$smokes/import_kineto.log" 2>&1 &
  kineto_smoke=$!
  smokes_failed=0
  wait "$xspace_smoke" || smokes_failed=1
  wait "$kineto_smoke" || smokes_failed=1
  for log in "$smokes"/decode_xspace.log "$smokes"/import_kineto.log; do
    echo "--- $(basename "$log" .log)"
    cat "$log"
  done
  rm -rf "$smokes"
  [ "$smokes_failed" = 0 ] || { echo "test: a fuzz smoke failed (above)" >&2; exit 1; }
fi
step "all checks passed"
