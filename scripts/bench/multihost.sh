#!/usr/bin/env bash
# The multi-host cold start of issue #23, side by side in one run: the first overview_page
# (all hosts) of a ~1 GB multi-host run, from oxprof's CLI, a cold `oxprof serve` and a cold
# xprof-rs server (if installed), then a reopen (a new `oxprof serve` on the cache the cold
# one filled). Time of the request (the CLI: the whole process) and peak RSS of the process,
# beside the largest host file.
#
#   scripts/bench/multihost.sh [LOGDIR]   (default bench-data/multihost: scripts/gen/multihost-profile.sh)
#   RUNS=3          runs per cell (min time, max peak RSS; MB = 10^6 bytes)
#   OXPROF_BIN=...  the binary (default target/release/oxprof, built when missing)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
logdir="${1:-$root/bench-data/multihost}"
runs="${RUNS:-3}"
oxprof="${OXPROF_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/oxprof}"
run_dir="$(find "$logdir/plugins/profile" -mindepth 1 -maxdepth 1 -type d | sort | head -1)"
[ -n "$run_dir" ] || { echo "no run under $logdir/plugins/profile (run scripts/gen/multihost-profile.sh)" >&2; exit 2; }
[ -x "$oxprof" ] || (cd "$root" && cargo build --release -p oxprof --locked >&2)
run="$(basename "$run_dir")"

scratch="$(mktemp -d)"
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$scratch"' EXIT
# A private logdir of hard links (a copy across filesystems): servers may write beside it.
fresh_logdir() {
  rm -rf "$scratch/logdir" && mkdir -p "$scratch/logdir/plugins/profile/$run"
  for f in "$run_dir"/*.xplane.pb; do
    ln "$(realpath "$f")" "$scratch/logdir/plugins/profile/$run/" 2>/dev/null || cp "$f" "$scratch/logdir/plugins/profile/$run/"
  done
  sync
}
fresh_logdir
hosts=$(find "$run_dir" -name '*.xplane.pb' | wc -l)
total=$(find "$run_dir" -name '*.xplane.pb' -printf '%s\n' | awk '{ s += $1 } END { print s }')
largest=$(find "$run_dir" -name '*.xplane.pb' -printf '%s\n' | sort -n | tail -1)
mb() { awk -v b="$1" 'BEGIN { printf "%.0f", b / 1e6 }'; }
echo "run $run: $hosts hosts, $(mb "$total") MB, largest host file $(mb "$largest") MB; load $(cut -d' ' -f1-3 /proc/loadavg)"

# Starts a server ($@: its command, with PORT substituted) and waits for its run list.
start_server() {
  local port=$(( 20000 + RANDOM % 20000 ))
  "${@//PORT/$port}" > "$scratch/server.log" 2>&1 &
  pid=$!
  base="http://127.0.0.1:$port"
  for _ in $(seq 1 200); do
    curl -fs "$base/data/plugin/profile/runs" > /dev/null 2>&1 && return 0
    sleep 0.05
  done
  cat "$scratch/server.log" >&2; return 1
}
# Times one overview_page request of all hosts; prints "seconds peak_rss_mb" and stops the server.
overview_request() {
  local t hwm
  t=$(curl -fs --compressed -o /dev/null -w '%{time_total}' \
    "$base/data/plugin/profile/data?run=$run&tag=overview_page&host=ALL_HOSTS")
  hwm=$(awk '/VmHWM/ { print int($2 * 1024 / 1e6) }' "/proc/$pid/status")
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  echo "$t $hwm"
}
row() { # label seconds rss
  printf '| %s | %.2f s | %s MB | %.2f× |\n' "$1" "$2" "$3" "$(awk -v r="$3" -v l="$(mb "$largest")" 'BEGIN { print r / l }')"
}
best() { sort -n | head -1; }

echo "| first overview_page (ALL_HOSTS) | time (min of $runs) | peak RSS | RSS ÷ largest host file |"
echo "|---|---:|---:|---:|"
times=() peak=0
for _ in $(seq "$runs"); do
  rm -rf "$scratch/cache"
  /usr/bin/time -f '%e %M' -o "$scratch/time" "$oxprof" data overview_page "$scratch/logdir/plugins/profile/$run" \
    --cache-dir "$scratch/cache" > /dev/null 2> "$scratch/err"
  read -r t m < "$scratch/time"; times+=("$t"); peak=$(( m * 1024 / 1000000 > peak ? m * 1024 / 1000000 : peak ))
done
row "oxprof CLI (cold, empty cache)" "$(printf '%s\n' "${times[@]}" | best)" "$peak"

times=() peak=0
for _ in $(seq "$runs"); do
  rm -rf "$scratch/cache"
  start_server "$oxprof" serve "$scratch/logdir" --port PORT --bind 127.0.0.1 --cache-dir "$scratch/cache"
  read -r t m < <(overview_request); times+=("$t"); peak=$(( m > peak ? m : peak ))
done
row "oxprof serve (cold request, empty cache)" "$(printf '%s\n' "${times[@]}" | best)" "$peak"

times=() peak=0
for _ in $(seq "$runs"); do
  start_server "$oxprof" serve "$scratch/logdir" --port PORT --bind 127.0.0.1 --cache-dir "$scratch/cache"
  read -r t m < <(overview_request); times+=("$t"); peak=$(( m > peak ? m : peak ))
done
row "oxprof serve (reopen: new process, cache filled)" "$(printf '%s\n' "${times[@]}" | best)" "$peak"

if command -v xprof-rs > /dev/null; then
  times=() peak=0
  for _ in $(seq "$runs"); do
    fresh_logdir
    start_server xprof-rs --logdir "$scratch/logdir" --port PORT --host 127.0.0.1
    read -r t m < <(overview_request); times+=("$t"); peak=$(( m > peak ? m : peak ))
  done
  row "xprof-rs (cold request)" "$(printf '%s\n' "${times[@]}" | best)" "$peak"
else
  echo "| xprof-rs | – | – | skipped: not installed (cargo install xprof-rs) |"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
