#!/usr/bin/env bash
# Benchmark (not a test): a PyTorch trace into pandas DataFrames from Python, oxprof's wheel
# against HTA's loader (traceinsight 0.6.1) on the same files, fresh process each, ways
# interleaved (python/bench/bench_hta.py; prints a Markdown table). Two venvs: the wheel's
# (scripts/ci/test-python.sh makes it) and HTA's (scripts/bench/kineto-loaders.sh --install).
#   scripts/bench/python-hta.sh [TRACE...]
#     default: the largest trace of the third-party test data that HTA loads (kineto's
#     ResNet-50 sample, 35 MB of JSON) and bench-data/kineto_256/rank-0.pt.trace.json
#     (KINETO_SIZE_MB=256 scripts/gen/large-kineto-trace.sh, made here if missing)
#   RUNS=N                    runs of each way per trace (default 3)
#   OXPROF_WHEEL_VENV=DIR     default <repo>/target/venv-wheel-test
#   OXPROF_KINETO_BENCH_VENV  default ~/.cache/oxprof-kineto-bench/venv
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VENV="${OXPROF_WHEEL_VENV:-$PWD/target/venv-wheel-test}"
HTA_VENV="${OXPROF_KINETO_BENCH_VENV:-$HOME/.cache/oxprof-kineto-bench/venv}"
EXTERNAL="$PWD/../shared/testdata/external"
[ -x "$VENV/bin/oxprof" ] || { echo "bench-python-hta: no wheel installed in $VENV; run scripts/ci/test-python.sh" >&2; exit 1; }
OXPROF_KINETO_BENCH_VENV="$HTA_VENV" bash scripts/bench/kineto-loaders.sh --install

traces=("$@")
if [ "${#traces[@]}" -eq 0 ]; then
  large="$PWD/bench-data/kineto_256/rank-0.pt.trace.json"
  [ -f "$large" ] || KINETO_SIZE_MB=256 KINETO_OUT="$large" bash scripts/gen/large-kineto-trace.sh
  traces=("$EXTERNAL/pytorch-kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz" "$large")
fi
echo "bench-python-hta: $(date -u '+%F %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exec "$VENV/bin/python" python/bench/bench_hta.py --oxprof-python "$VENV/bin/python" --hta-python "$HTA_VENV/bin/python" \
  --runs "${RUNS:-3}" "${traces[@]}"
