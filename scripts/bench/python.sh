#!/usr/bin/env bash
# Benchmark (not a test): a large profile's tool tables as DataFrames from Python vs
# `oxprof data` (python/bench/bench_tables.py), cold and from the persistent analysis cache,
# with the wheel installed in the venv scripts/ci/test-python.sh made.
#   PROFILE=FILE   default bench-data/jax_large.xplane.pb (scripts/gen/large-profile.sh)
#   RUNS=N         runs of each way, interleaved (default 7)
#   TOOLS="..."    the tools (default: framework_op_stats hlo_stats)
#   OXPROF_WHEEL_VENV=DIR   default <repo>/target/venv-wheel-test
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VENV="${OXPROF_WHEEL_VENV:-$PWD/target/venv-wheel-test}"
PROFILE="${PROFILE:-bench-data/jax_large.xplane.pb}"
[ -x "$VENV/bin/oxprof" ] || { echo "bench-python: no wheel installed in $VENV; run scripts/ci/test-python.sh" >&2; exit 1; }
[ -f "$PROFILE" ] || { echo "bench-python: $PROFILE is missing; run scripts/gen/large-profile.sh" >&2; exit 1; }
PROFILE="$(realpath "$PROFILE")"
echo "bench-python: $(date -u '+%F %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
cd python/bench
# shellcheck disable=SC2086
exec "$VENV/bin/python" bench_tables.py "$PROFILE" "${RUNS:-7}" ${TOOLS:-framework_op_stats hlo_stats}
