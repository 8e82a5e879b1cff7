#!/usr/bin/env bash
# Reopening a profile: what a trace viewer and the overview ask first, from a new `oxprof
# serve` process each time, with the persistent cache empty (cold) and then filled by the
# previous process (reopen).
#
#   scripts/bench/reopen.sh [PROFILE.xplane.pb[.gz]]   (default bench-data/jax_large.xplane.pb)
#   RUNS=3          reopen runs (one cold run first)
#   OXPROF_BIN=...  the binary (default target/release/oxprof, built when missing)
#   OXPROF_SERVE_ARGS="--max-profile-bytes 12GiB"   more `oxprof serve` flags (split on spaces)
#
# Per process (after listing the runs): the time of /oxprof/api/trace/tracks + the whole-trace /trace/window
# (width 1200: the viewer's opening views), of overview_page (/data), the server's CPU
# seconds and peak RSS (VmHWM) after the opening views and after overview_page. Prints the load average before and after.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
profile="${1:-$root/bench-data/jax_large.xplane.pb}"
runs="${RUNS:-3}"
oxprof="${OXPROF_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/oxprof}"
[ -f "$profile" ] || { echo "no profile at $profile (run scripts/gen/large-profile.sh)" >&2; exit 2; }
[ -x "$oxprof" ] || (cd "$root" && cargo build --release -p oxprof --locked >&2)

scratch="$(mktemp -d)"
# (`kill 0` would end the whole process group: a caller's too.)
trap 'if [ -n "${pid:-}" ]; then kill "$pid" 2>/dev/null || true; fi; rm -rf "$scratch"' EXIT
mkdir -p "$scratch/logdir/plugins/profile/run1" "$scratch/cache"
# The server follows no symlink out of its root: a hard link (a copy across filesystems).
ln "$(realpath "$profile")" "$scratch/logdir/plugins/profile/run1/$(basename "$profile")" 2>/dev/null ||
  cp "$profile" "$scratch/logdir/plugins/profile/run1/$(basename "$profile")"

one() { # label
  # shellcheck disable=SC2086 # flags split on spaces
  "$oxprof" serve "$scratch/logdir" --port 0 --bind 127.0.0.1 --cache-dir "$scratch/cache" ${OXPROF_SERVE_ARGS:-} >"$scratch/out" 2>&1 &
  pid=$!
  local url=""
  for _ in $(seq 1 300); do
    url=$(grep -o 'http://127.0.0.1:[0-9]*' "$scratch/out" | head -1 || true)
    [ -n "$url" ] && break
    sleep 0.05
  done
  [ -n "$url" ] || { cat "$scratch/out" >&2; exit 1; }
  # The UI lists the runs first (untimed here: the catalog scan is not the profile's).
  curl -sf -o /dev/null "$url/data/plugin/profile/runs"
  local tracks_s window_s overview_s start end
  tracks_s=$(curl -sf -o "$scratch/tracks.json" -w '%{time_total}' "$url/oxprof/api/trace/tracks?run=run1")
  read -r start end < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["start_ps"], d["end_ps"])' "$scratch/tracks.json")
  window_s=$(curl -sf -o /dev/null -w '%{time_total}' "$url/oxprof/api/trace/window?run=run1&start_ps=$start&end_ps=$end&width=1200")
  local views_rss
  views_rss=$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$pid/status")
  overview_s=$(curl -sf -o /dev/null -w '%{time_total}' "$url/data/plugin/profile/data?run=run1&tag=overview_page&host=ALL_HOSTS")
  local cpu rss
  cpu=$(awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$pid/stat")
  rss=$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$pid/status")
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  printf '%-7s trace viewer opening views %6.3f s (peak RSS %s MiB)   overview_page %6.3f s   server CPU %s s   peak RSS %s MiB\n' \
    "$1" "$(echo "$tracks_s + $window_s" | bc)" "$views_rss" "$overview_s" "$cpu" "$rss"
}

echo "profile $(basename "$profile") ($(stat -Lc %s "$profile") bytes); load $(cut -d' ' -f1-3 /proc/loadavg)"
one cold
for i in $(seq 1 "$runs"); do one "reopen"; done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
