#!/usr/bin/env bash
# Writes a synthetic TPU pod for tests and benchmarks (oxprof_testkit::pod; testdata/README.md
# says what is modelled and what is planted): one training job's per-host XSpace files,
# a straggler (3/4 of the hosts in, 1.5x) and a slow-input host (1/4 in, +60% input wait).
#   scripts/gen/pod.sh [OUT] [HOSTS] [HOST_MB] [gen_pod options...]
# Defaults: bench-data/pod, 256 hosts, 150 MB per host (38 GB: check `df -h` first).
# OUT gets plugins/profile/2026_01_01_00_00_00/tpu-pod-host-NNN.xplane.pb; existing files
# are never written over (choose a new OUT). More options: --steps, --ops-per-step,
# --cores, --seed, --straggler HOST:SLOWDOWN, --slow-input HOST:EXTRA, --no-plants,
# --no-megascale, --run (cargo run -p oxprof-testkit --example gen_pod -- --help).
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-bench-data/pod}"
hosts="${2:-256}"
host_mb="${3:-150}"
shift $(( $# < 3 ? $# : 3 ))
cargo run -q --release --locked -p oxprof-testkit --example gen_pod -- \
  "$out" --hosts "$hosts" --host-mb "$host_mb" "$@"
