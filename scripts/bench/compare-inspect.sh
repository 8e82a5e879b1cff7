#!/usr/bin/env bash
# Compare reading one XSpace profile with oxprof against plain file reading, Python
# protobuf and XProf's own converter. Prints a Markdown table.
#
#   scripts/bench/compare-inspect.sh [PROFILE]     # default: bench-data/jax_large.xplane.pb
#
# Rows (each run RUNS times in a fresh process, nothing dropped from the page cache,
# timed with /usr/bin/time -f '%e %M'; reported: the minimum wall time and the maximum
# peak RSS over the runs):
#   a) cat FILE > /dev/null                            plain file reading
#   b) oxprof inspect FILE --json > /dev/null          release build
#   c) Python: tensorflow.tsl xplane_pb2 XSpace().ParseFromString + counting events
#   d) XProf: xprof.convert.raw_to_tool_data.xspace_to_tool_names([copy]) on a scratch
#      copy of the file (XProf writes <module>.hlo_proto.pb files next to it)
#   e) xprof-rs: only noted when installed (never installed by this script)
# Rows whose tool is missing are skipped with a note. MB = 10^6 bytes.
#
# Works from any directory. Environment:
#   OXPROF_REFKIT_VENV   venv for c) and d) (default ~/.cache/oxprof-refkit/venv)
#   OXPROF_BIN           oxprof binary (default $CARGO_TARGET_DIR/release/oxprof, else
#                        <repo>/target/release/oxprof; built with
#                        `cargo build --release -p oxprof` when missing)
#   RUNS                 repetitions per row (default 3)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
abspath() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }

case "${1:-}" in -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ "$#" -le 1 ] || { echo "usage: $0 [PROFILE]" >&2; exit 2; }

PROFILE="$(abspath "${1:-$ROOT/bench-data/jax_large.xplane.pb}")"
if [ ! -f "$PROFILE" ]; then
  echo "profile not found: $PROFILE" >&2
  [ "$#" -eq 0 ] && echo "make it with: $ROOT/scripts/gen/large-profile.sh" >&2
  exit 1
fi
RUNS="${RUNS:-3}"
VENV="${OXPROF_REFKIT_VENV:-$HOME/.cache/oxprof-refkit/venv}"
PY="$VENV/bin/python"
TIME=/usr/bin/time
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
[ -x "$TIME" ] || { echo "$TIME (GNU time) is required" >&2; exit 1; }

# --- the oxprof release binary (built when missing; CARGO_TARGET_DIR is respected) ---
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
  export CARGO_TARGET_DIR="$(abspath "$CARGO_TARGET_DIR")"
  TARGET_DIR="$CARGO_TARGET_DIR"
else
  TARGET_DIR="$ROOT/target"
fi
OXPROF="$(abspath "${OXPROF_BIN:-$TARGET_DIR/release/oxprof}")"
if [ ! -x "$OXPROF" ]; then
  echo "building oxprof (release): $OXPROF is missing" >&2
  (cd "$ROOT" && cargo build --release -p oxprof >&2)
  [ -x "$OXPROF" ] || { echo "build did not produce $OXPROF" >&2; exit 1; }
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/oxprof-compare.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

BYTES="$(stat -c %s "$PROFILE")"
FILE_MB="$(awk -v b="$BYTES" 'BEGIN { printf "%.2f", b / 1e6 }')"

# --- measurement ------------------------------------------------------------------
# measure KEY STDOUT SETUP CMD...   STDOUT: "null" (discard) or "keep" ($TMP/KEY.out)
#                                   SETUP: a function run before each repetition, or ":"
# Sets WALL[KEY] (min %e), HIRES[KEY] (min wall from a µs clock), RSS_KB[KEY] (max %M),
# RAW[KEY] (every run), FAIL[KEY].
declare -A WALL HIRES RSS_KB RAW FAIL INPROC EXTRA NOTE
# high-resolution clock (bash 5 EPOCHREALTIME, else date); the span measured around
# /usr/bin/time includes its own fork/exec (about 1 ms)
now() { if [ -n "${EPOCHREALTIME:-}" ]; then printf '%s\n' "${EPOCHREALTIME/,/.}"; else date +%s.%N; fi; }
measure() {
  local key="$1" out="$2" setup="$3"; shift 3
  local i w m rc dest t0 t1 h min="" hmin="" max=0 raw=""
  for ((i = 1; i <= RUNS; i++)); do
    "$setup"
    dest=/dev/null; [ "$out" = keep ] && dest="$TMP/$key.out.$i"
    rc=0
    t0="$(now)"
    "$TIME" -o "$TMP/$key.time" -f '%e %M' "$@" > "$dest" 2> "$TMP/$key.err" || rc=$?
    t1="$(now)"
    if [ "$rc" -ne 0 ]; then
      FAIL[$key]="exit $rc: $(grep -v '^Command exited' "$TMP/$key.err" | tail -n 2 | tr '\n' ' ' | cut -c1-200)"
      return 0
    fi
    read -r w m < <(tail -n 1 "$TMP/$key.time")
    h="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
    raw+="${raw:+, }$(awk -v h="$h" -v m="$m" 'BEGIN { printf "%s s/%.0f MB", h, m * 1024 / 1e6 }')"
    if [ -z "$min" ] || awk -v a="$w" -v b="$min" 'BEGIN { exit !(a < b) }'; then min="$w"; fi
    if [ -z "$hmin" ] || awk -v a="$h" -v b="$hmin" 'BEGIN { exit !(a < b) }'; then hmin="$h"; fi
    [ "$m" -gt "$max" ] && max="$m"
  done
  WALL[$key]="$min"; HIRES[$key]="$hmin"; RSS_KB[$key]="$max"; RAW[$key]="$raw"
}
# min over the runs of the number after "INPROC " in the kept stdout files
inproc_min() {
  cat "$TMP/$1".out.* 2> /dev/null | awk '$1 == "INPROC" { if (m == "" || $2 < m) m = $2 } END { print m }'
}
last_line() { ls "$TMP/$1".out.* 2> /dev/null | sort -V | tail -n 1 | xargs -r tail -n 1; }

echo "profile: $PROFILE ($BYTES bytes = $FILE_MB MB)" >&2
echo "machine: $(nproc) CPUs, $(uname -sr); $RUNS runs per row" >&2

# (a) plain file reading
echo "a) cat" >&2
measure cat null : cat "$PROFILE"

# (b) oxprof
echo "b) oxprof inspect --json" >&2
measure oxprof null : "$OXPROF" inspect "$PROFILE" --json
if [ -z "${FAIL[oxprof]:-}" ] && command -v python3 > /dev/null; then
  EXTRA[oxprof]="$("$OXPROF" inspect "$PROFILE" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(p["events"] for r in d["runs"] for h in r["hosts"] for p in h["planes"]))' 2> /dev/null || true)"
fi

# (c) Python protobuf (upb) through TensorFlow's xplane_pb2
have_py_module() { [ -x "$PY" ] && "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$1') is None)" 2> /dev/null; }
if have_py_module tensorflow; then
  echo "c) Python protobuf" >&2
  cat > "$TMP/parse.py" << 'EOF'
import sys, time
t0 = time.perf_counter()
from tensorflow.tsl.profiler.protobuf import xplane_pb2
from google.protobuf.internal import api_implementation
t1 = time.perf_counter()
data = open(sys.argv[1], "rb").read()
space = xplane_pb2.XSpace()
space.ParseFromString(data)
t2 = time.perf_counter()
n = sum(len(line.events) for plane in space.planes for line in plane.lines)
t3 = time.perf_counter()
print(f"INPROC {t3 - t1:.3f} import_s={t1 - t0:.2f} parse_s={t2 - t1:.3f} count_s={t3 - t2:.3f} "
      f"events={n} backend={api_implementation.Type()}")
EOF
  measure python keep : "$PY" "$TMP/parse.py" "$PROFILE"
  INPROC[python]="$(inproc_min python)"
  EXTRA[python]="$(last_line python)"
else
  NOTE[python]="skipped: no venv with tensorflow at $VENV"
fi

# (d) XProf's converter (C++ behind Python), on a fresh scratch copy for every run
SCRATCH="$TMP/xprof_scratch"
XPLANE_COPY="$SCRATCH/$(basename "$PROFILE")"
case "$XPLANE_COPY" in *.xplane.pb) ;; *) XPLANE_COPY="$SCRATCH/host.xplane.pb" ;; esac
fresh_copy() { rm -rf "$SCRATCH"; mkdir -p "$SCRATCH"; cp "$PROFILE" "$XPLANE_COPY"; }
if have_py_module xprof; then
  echo "d) XProf xspace_to_tool_names" >&2
  cat > "$TMP/xprof_names.py" << 'EOF'
import sys, time
t0 = time.perf_counter()
from xprof.convert import raw_to_tool_data as r2t
t1 = time.perf_counter()
names = r2t.xspace_to_tool_names([sys.argv[1]])
t2 = time.perf_counter()
if not names:
    sys.exit("xspace_to_tool_names returned no tools")
print(f"INPROC {t2 - t1:.3f} import_s={t1 - t0:.2f} tools={len(names)}")
EOF
  measure xprof keep fresh_copy "$PY" "$TMP/xprof_names.py" "$XPLANE_COPY"
  INPROC[xprof]="$(inproc_min xprof)"
  EXTRA[xprof]="$(last_line xprof)"
  rm -rf "$SCRATCH"
else
  NOTE[xprof]="skipped: no venv with xprof at $VENV"
fi

# (e) xprof-rs: noted only
if command -v xprof-rs > /dev/null; then
  v="$(timeout 10 xprof-rs --version 2> /dev/null | head -n 1 || true)"
  NOTE[xprofrs]="installed at $(command -v xprof-rs)${v:+ ($v)}; not measured (its CLI is not oxprof's)"
else
  NOTE[xprofrs]="not installed (command -v xprof-rs failed); skipped, not installed by this script"
fi

# --- table ----------------------------------------------------------------------------
fmt_row() { # key label
  local key="$1" label="$2"
  if [ -n "${FAIL[$key]:-}" ]; then
    printf '| %s | failed | | | | | | %s |\n' "$label" "${FAIL[$key]}"; return
  fi
  if [ -z "${WALL[$key]:-}" ]; then
    printf '| %s | – | – | – | – | – | – | %s |\n' "$label" "${NOTE[$key]:-skipped}"; return
  fi
  local note="runs: ${RAW[$key]}"
  if [ -n "${INPROC[$key]:-}" ]; then
    note+="; in-process $(awk -v s="${INPROC[$key]}" -v mb="$FILE_MB" 'BEGIN { printf "%.3f s (%.0f MB/s)", s, (s > 0 ? mb / s : 0) }')"
  fi
  [ -n "${EXTRA[$key]:-}" ] && note+="; ${INPROC[$key]:+last run: }${EXTRA[$key]#INPROC * }"
  awk -v w="${WALL[$key]}" -v h="${HIRES[$key]}" -v kb="${RSS_KB[$key]}" -v mb="$FILE_MB" \
      -v ox="${HIRES[oxprof]:-}" -v label="$label" -v note="$note" 'BEGIN {
    rss = kb * 1024 / 1e6
    thr = (h > 0) ? sprintf("%.0f", mb / h) : "–"
    rel = (ox == "") ? "–" : (ox > 0 ? sprintf("%.2f×", h / ox) : "–")
    printf "| %s | %.2f | %.3f | %.0f | %s | %s | %.2f | %s |\n", label, w, h, rss, thr, rel, rss / mb, note
  }'
}

echo
echo "Profile \`$(basename "$PROFILE")\`: $FILE_MB MB; $RUNS runs each, min wall time, max peak RSS (MB = 10^6 bytes); $(nproc) CPUs."
echo
echo "| tool | wall s (min, %e) | wall s (min, µs clock) | peak RSS MB (max) | MB/s | time ÷ oxprof | RSS ÷ file size | notes |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
fmt_row cat "a) \`cat FILE > /dev/null\`"
EXTRA[oxprof]="${EXTRA[oxprof]:+events=${EXTRA[oxprof]}}"
fmt_row oxprof "b) \`oxprof inspect FILE --json\`"
fmt_row python "c) Python protobuf \`XSpace.ParseFromString\` + count"
fmt_row xprof "d) XProf \`xspace_to_tool_names\`"
printf '| e) xprof-rs | – | – | – | – | – | – | %s |\n' "${NOTE[xprofrs]}"
echo
echo "Wall time and RSS are per process (startup and imports included; c and d import"
echo "TensorFlow / XProf). \"in-process\" is the parse+count (c) or converter call (d) alone."
echo "/usr/bin/time reports wall seconds with 0.01 s resolution, so MB/s and time ÷ oxprof use"
echo "the µs-clock wall time taken around the same runs (it includes ~1 ms of /usr/bin/time"
echo "fork/exec); the per-run numbers in the notes are µs-clock seconds / peak RSS."
