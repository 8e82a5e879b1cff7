#!/usr/bin/env bash
# Make a ~1 GB multi-host XSpace run for the cold-start benchmark of issue #23:
# bench-data/multihost/plugins/profile/run1/host{0..N-1}.xplane.pb, each host a separate
# real JAX run of the refkit's gen_jax_large.py (jitted steps, eager dispatches, the Python
# tracer: XProf's real event mix), with different step counts so that the hosts differ.
#
#   scripts/gen/multihost-profile.sh            # makes the hosts that are missing
#   scripts/gen/multihost-profile.sh --force    # regenerates every host
#
# Environment:
#   MULTIHOST_HOSTS   number of hosts (default 7: ≈1.0 GB)
#   MULTIHOST_STEPS   steps of the first host (default 3000, ≈170 MB); host k runs
#                     STEPS - 150·k steps
#   OXPROF_MULTIHOST_OUT  the logdir to write (default bench-data/multihost)
# Uses scripts/gen/large-profile.sh for each host (its refkit venv); about 90 s and 5 GB of
# RAM per host on 2 cores, one host at a time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
hosts="${MULTIHOST_HOSTS:-7}"
steps="${MULTIHOST_STEPS:-3000}"
out="${OXPROF_MULTIHOST_OUT:-$root/bench-data/multihost}"
run="$out/plugins/profile/run1"

force=0
for arg in "$@"; do
  case "$arg" in
    --force | -f) force=1 ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $arg (usage: $0 [--force])" >&2; exit 2 ;;
  esac
done

mkdir -p "$run"
for k in $(seq 0 $((hosts - 1))); do
  host_steps=$((steps - 150 * k))
  if [ -f "$run/host$k.xplane.pb" ] && [ "$force" = 0 ]; then
    echo "=== host$k: exists"
    continue
  fi
  echo "=== host$k: $host_steps steps"
  REFKIT_LARGE_STEPS="$host_steps" OXPROF_LARGE_PROFILE_OUT="$run/host$k.xplane.pb" \
    "$root/scripts/gen/large-profile.sh" --force
done
echo "wrote $run: $(find "$run" -name '*.xplane.pb' | wc -l) hosts, $(du -sb "$run" | cut -f1) bytes"
