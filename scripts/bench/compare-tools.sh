#!/usr/bin/env bash
# Side-by-side: one XProf tool computed from a cold start by oxprof, by XProf 2.24.2 (its own
# converter, the code behind its server) and by xprof-rs (if installed), on the same profile.
#
#   scripts/bench/compare-tools.sh [PROFILE.xplane.pb] [TOOL ...]
#     PROFILE  default bench-data/jax_large.xplane.pb (scripts/gen/large-profile.sh)
#     TOOL     default overview_page
#   RUNS=3   runs per cell (min time, max peak RSS are reported; MB = 10^6 bytes)
#
# oxprof: `oxprof data TOOL FILE` (whole process, an empty persistent cache each run: the
# first-ever cold request; `scripts/bench/reopen.sh` times reopening). XProf: a fresh Python process calling
# `xprof.convert.raw_to_tool_data.xspace_to_tool_data` on a fresh copy of the file (XProf
# writes caches beside it). xprof-rs: its server on 127.0.0.1, one cold HTTP request for
# the tool, peak RSS of the server process. Missing tools are skipped with a note.
# Both servers (oxprof serve with an empty persistent cache) are also asked the same
# request twice: the cold request, then the warm repeat.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
profile="${1:-$root/bench-data/jax_large.xplane.pb}"
shift || true
tools=("$@")
[ ${#tools[@]} -eq 0 ] && tools=(overview_page)
runs="${RUNS:-3}"
venv="${OXPROF_REFKIT_VENV:-$HOME/.cache/oxprof-refkit/venv}"
target="${CARGO_TARGET_DIR:-$root/target}"
oxprof="${OXPROF_BIN:-$target/release/oxprof}"

[ -f "$profile" ] || { echo "no profile at $profile (run scripts/gen/large-profile.sh)" >&2; exit 2; }
if [ ! -x "$oxprof" ]; then
  (cd "$root" && cargo build --release -p oxprof >&2)
fi
mb=$(awk -v b="$(stat -c %s "$profile")" 'BEGIN { printf "%.1f", b / 1e6 }')
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"; [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null || true' EXIT

# Runs "$@" RUNS times under /usr/bin/time; prints "min_seconds max_rss_mb".
measure() {
  local best="" rss=0 t m
  for _ in $(seq "$runs"); do
    /usr/bin/time -f '%e %M' -o "$scratch/time" "$@" > /dev/null 2> "$scratch/err" || { echo "fail fail"; return; }
    read -r t m < "$scratch/time"
    best=$(awk -v a="$best" -v b="$t" 'BEGIN { print (a == "" || b < a) ? b : a }')
    rss=$(( m > rss ? m : rss ))
  done
  echo "$best $((rss * 1024 / 1000000))"
}

xprof_run() { # tool
  rm -rf "$scratch/xp" && mkdir -p "$scratch/xp" && cp "$profile" "$scratch/xp/host.xplane.pb"
  "$venv/bin/python" - "$scratch/xp/host.xplane.pb" "$1" <<'PY'
import sys
from xprof.convert import raw_to_tool_data as r2t
path, tool = sys.argv[1], sys.argv[2]
params = {"use_saved_result": False, "host": "host", "hosts": ["host"]}
if tool.startswith("trace_viewer"):
    params["trace_viewer_options"] = {"resolution": 8000, "full_dma": False}
data, _ = r2t.xspace_to_tool_data([path], tool, params)
PY
}
export -f xprof_run
export profile scratch venv

echo "| tool | implementation | wall s (min of $runs) | peak RSS MB | RSS ÷ file ($mb MB) | time ÷ oxprof |"
echo "|---|---|---:|---:|---:|---:|"
for tool in "${tools[@]}"; do
  # The trace viewer is asked as XProf's UI asks it (resolution 8000), by all three.
  oxparams=() query=""
  if [[ "$tool" == trace_viewer* ]]; then
    oxparams=(--param resolution=8000) query="&resolution=8000"
  fi
  # The copies XProf and xprof-rs runs make are written back in the background; flush them
  # first so that no implementation is timed against another's disk writes.
  sync
  # First-ever cold: each run starts with an empty persistent cache (and fills it).
  read -r ot orss < <(measure bash -c 'd=$(mktemp -d); "$@" --cache-dir "$d"; s=$?; rm -rf "$d"; exit $s' _ \
    "$oxprof" data "$tool" "$profile" "${oxparams[@]}")
  row() { # name seconds rss
    local ratio_rss ratio_t
    ratio_rss=$(awk -v r="$3" -v f="$mb" 'BEGIN { printf "%.2f", r / f }')
    ratio_t=$(awk -v a="$2" -v b="$ot" 'BEGIN { printf "%.1f×", (b > 0) ? a / b : 0 }')
    echo "| $tool | $1 | $2 | $3 | $ratio_rss | $ratio_t |"
  }
  row oxprof "$ot" "$orss"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import xprof' 2>/dev/null; then
    sync
    read -r xt xrss < <(measure bash -c "xprof_run $tool")
    row "XProf 2.24.2 (converter, fresh process)" "$xt" "$xrss"
  else
    echo "| $tool | XProf | – | – | – | skipped: no refkit venv at $venv |"
  fi
  # A server ($2…, PORT and LOGDIR substituted) on a fresh copy: one cold request for the
  # tool, then the same request again (warm: the session's caches).
  server_rows() { # label command...
    local label="$1" best="" warm="" peak=0 t w hwm port base
    shift
    for _ in $(seq "$runs"); do
      rm -rf "$scratch/logdir" "$scratch/cache" && mkdir -p "$scratch/logdir/plugins/profile/run" && cp "$profile" "$scratch/logdir/plugins/profile/run/host.xplane.pb"
      sync
      port=$(( 20000 + RANDOM % 20000 ))
      base="http://127.0.0.1:$port/data/plugin/profile"
      local cmd=("${@//PORT/$port}")
      "${cmd[@]//LOGDIR/$scratch/logdir}" > "$scratch/server.log" 2>&1 &
      server_pid=$!
      for _ in $(seq 100); do curl -fs "$base/runs" > /dev/null && break; sleep 0.1; done
      t=$(curl -fs --compressed -o /dev/null -w '%{time_total}' "$base/data?run=run&tag=$tool&host=host$query" || echo 0)
      w=$(curl -fs --compressed -o /dev/null -w '%{time_total}' "$base/data?run=run&tag=$tool&host=host$query" || echo 0)
      hwm=$(awk '/VmHWM/ { print int($2 * 1024 / 1000000) }' "/proc/$server_pid/status" 2>/dev/null || echo 0)
      kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; server_pid=""
      peak=$(( hwm > peak ? hwm : peak ))
      # A failed request (curl's time 0) is not a time: reported as "fail" if all fail.
      [ "$t" = 0 ] || best=$(awk -v a="$best" -v b="$t" 'BEGIN { printf "%.3f", (a == "" || b < a) ? b : a }')
      [ "$w" = 0 ] || warm=$(awk -v a="$warm" -v b="$w" 'BEGIN { printf "%.4f", (a == "" || b < a) ? b : a }')
    done
    row "$label (server, cold request)" "${best:-fail}" "$peak"
    row "$label (server, warm repeat)" "${warm:-fail}" "$peak"
  }
  server_rows oxprof "$oxprof" serve LOGDIR --port PORT --bind 127.0.0.1 --cache-dir "$scratch/cache"
  if command -v xprof-rs > /dev/null; then
    server_rows xprof-rs xprof-rs --logdir LOGDIR --port PORT --host 127.0.0.1
  else
    echo "| $tool | xprof-rs | – | – | – | skipped: not installed (cargo install xprof-rs) |"
  fi
done
