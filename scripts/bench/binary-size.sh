#!/usr/bin/env bash
# What the release binary costs, in bytes and in build time: builds `oxprof` (`cargo build
# --release --locked -p oxprof --timings`, niced) under /usr/bin/time, strips a copy, breaks
# the unstripped binary's code down by crate (bench/binary-size-breakdown.py), reads the
# slowest crates from cargo's timings, and records the result as one row (LABEL) of
# docs/bench-results/binary-size.json; then rewrites docs/benchmarks.md. Commit both.
#
#   scripts/bench/binary-size.sh LABEL [CARGO_ARGS...]
#     e.g. scripts/bench/binary-size.sh 'lto fat' --config 'profile.release.lto="fat"'
#
#   BINSIZE_TARGET=dir  target directory (default target/binary-size); the build is cold
#                       (build time recorded) only when it holds no release build yet
#   BINSIZE_COLD=1      empty BINSIZE_TARGET first (only a directory under target/)
#   BINSIZE_INSTALL=dir time a cold `cargo install --path crates/oxprof --root dir` instead
#                       (what a user runs; implies BINSIZE_COLD=1)
#   BINSIZE_AB=bin      also time analyses against that oxprof (bench/ab-cold.sh, which reads
#                       bench-data/), and SQL: user CPU of `oxprof query` GROUP BY over
#                       `slice` and of `oxprof export --to parquet` of jax_large, alternated;
#                       the medians' ratios new/old are recorded
#   BINSIZE_ROUNDS=n    ab-cold rounds (default 5)
#   BINSIZE_NOTE=text   what the row's configuration is (default: the cargo arguments)
#   NICE=n              the build's niceness (default 15: the machine is shared)
#
# The committed profile strips symbols: add `--config profile.release.strip=false` for the
# breakdown by crate (the code is the same). The page's summary rows ("glance") are written
# by people from the numbers.
#
# Build wall time depends on what else the machine runs; user+sys CPU seconds do much less,
# and CPU seconds / cores is the wall time an idle machine could reach at best. Both are
# recorded with the load average before and after.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
if [ $# -lt 1 ]; then
  sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
label="$1"
shift
target="${BINSIZE_TARGET:-$ROOT/target/binary-size}"
case "$target" in /*) ;; *) target="$ROOT/$target" ;; esac
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ -n "${BINSIZE_INSTALL:-}" ] || [ "${BINSIZE_COLD:-0}" = 1 ]; then
  case "$target" in
    "$ROOT"/target/?*) rm -rf "$target" ;;
    *) echo "binary-size: BINSIZE_COLD empties only a directory under $ROOT/target/, not $target" >&2; exit 1 ;;
  esac
fi
cold=false
[ -e "$target/release/oxprof" ] || cold=true
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${BINSIZE_INSTALL:-}" ]; then
  command=(cargo install --path crates/oxprof --root "$BINSIZE_INSTALL" --locked --force --timings "$@")
else
  command=(cargo build --release --locked -p oxprof --timings "$@")
fi
echo "binary-size: ${command[*]} (CARGO_TARGET_DIR=$target, load $load_before)" >&2
start=$(date +%s.%N)
CARGO_TARGET_DIR="$target" nice -n "${NICE:-15}" /usr/bin/time -f '%e %U %S %M' -o "$work/time" "${command[@]}"
end=$(date +%s.%N)
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
binary="$target/release/oxprof"
[ -x "$binary" ] || { echo "binary-size: no $binary after the build" >&2; exit 1; }
cp "$binary" "$work/stripped"
strip "$work/stripped"
if [ -n "${BINSIZE_INSTALL:-}" ]; then installed="$BINSIZE_INSTALL/bin/oxprof"; else installed="$binary"; fi
python3 scripts/bench/binary-size-breakdown.py "$binary" > "$work/breakdown.json" 2> "$work/breakdown.err" || true

ab=""
sql=""
if [ -n "${BINSIZE_AB:-}" ]; then
  scripts/bench/ab-cold.sh "$BINSIZE_AB" "$binary" "${BINSIZE_ROUNDS:-5}" | tee "$work/ab.md"
  ab="$work/ab.md"
  profile="$ROOT/bench-data/jax_large.xplane.pb"
  if [ -f "$profile" ]; then
    sql_one() { # label, binary, case: appends "case label user_seconds"
      if [ "$3" = export ]; then
        rm -rf "$work/export"
        /usr/bin/time -f '%U' -o "$work/t" "$2" export --to parquet "$profile" "$work/export" > /dev/null
      else
        /usr/bin/time -f '%U' -o "$work/t" "$2" query \
          'SELECT name, count(*), sum(dur) FROM slice GROUP BY name ORDER BY 3 DESC LIMIT 20' "$profile" > /dev/null
      fi
      echo "$3 $1 $(tail -1 "$work/t")" >> "$work/sql.txt"
    }
    for ((round = 1; round <= ${BINSIZE_ROUNDS:-5}; round++)); do
      for case in "GROUP BY" export; do
        if ((round % 2)); then
          sql_one A "$BINSIZE_AB" "$case"; sql_one B "$binary" "$case"
        else
          sql_one B "$binary" "$case"; sql_one A "$BINSIZE_AB" "$case"
        fi
      done
    done
    sql="$work/sql.txt"
  fi
fi

timings="$(ls -t "$target"/cargo-timings/cargo-timing-*.html 2>/dev/null | head -1 || true)"
LABEL="$label" NOTE="${BINSIZE_NOTE:-${*:-the release profile as committed}}" COLD="$cold" \
  LOAD_BEFORE="$load_before" LOAD_AFTER="$load_after" START="$start" END="$end" \
  COMMAND="${command[*]}" WORK="$work" BINARY="$binary" INSTALLED="$installed" \
  TIMINGS="$timings" AB="$ab" SQL="$sql" python3 - <<'EOF'
import datetime, json, os, re, subprocess, sys
sys.path.insert(0, "scripts/bench")
e = os.environ
root = os.getcwd()
path = os.path.join(root, "docs", "bench-results", "binary-size.json")
wall, user, system, peak_kb = open(os.path.join(e["WORK"], "time")).read().split()[-4:]
row = {
    "label": e["LABEL"],
    "config": e["NOTE"],
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
    "stripped_bytes": os.path.getsize(os.path.join(e["WORK"], "stripped")),
    "built_bytes": os.path.getsize(e["BINARY"]),
    "installed_bytes": os.path.getsize(e["INSTALLED"]),
    "cold_build": e["COLD"] == "true",
    "build_wall_s": round(float(wall), 1),
    "build_cpu_s": round(float(user) + float(system), 1),
    "build_peak_rss_mib": round(int(peak_kb) / 1024),
    "load": f"{e['LOAD_BEFORE']} before, {e['LOAD_AFTER']} after",
    "command": e["COMMAND"],
}
try:
    breakdown = json.load(open(os.path.join(e["WORK"], "breakdown.json")))
    row["sections"] = {k: v for k, v in breakdown["sections"].items()
                       if k in (".text", ".rodata", ".eh_frame", ".eh_frame_hdr", ".gcc_except_table", ".data.rel.ro")}
    row["families"] = breakdown["families"]
except (OSError, ValueError, KeyError):
    row["breakdown"] = open(os.path.join(e["WORK"], "breakdown.err")).read().strip() or "not available"
if e.get("TIMINGS"):
    # cargo's timings page embeds its units as `const UNIT_DATA = [...]`.
    html = open(e["TIMINGS"], encoding="utf-8").read()
    m = re.search(r"const UNIT_DATA = (\[.*?\]);\n", html, re.S)
    if m:
        units = json.loads(m.group(1))
        crates = {}
        for u in units:
            crates[u["name"]] = crates.get(u["name"], 0) + u["duration"]
        total = sum(crates.values())
        row["crate_seconds_total"] = round(total)
        row["slowest_crates"] = [[n, round(s)] for n, s in sorted(crates.items(), key=lambda kv: -kv[1])[:12]]
if e.get("AB"):
    ratios = {}
    for line in open(e["AB"]):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and re.fullmatch(r"[0-9.]+", cells[3] or "x"):
            ratios[cells[0]] = float(cells[3])
    row["analysis_time_ratio"] = ratios
if e.get("SQL"):
    import statistics
    cpu = {}
    for line in open(e["SQL"]):
        case, label, seconds = line.rsplit(" ", 2)
        cpu.setdefault(case, {}).setdefault(label, []).append(float(seconds))
    row["sql_cpu_ratio"] = {case: round(statistics.median(v["B"]) / statistics.median(v["A"]), 3)
                            for case, v in cpu.items() if statistics.median(v["A"]) > 0}
result = {}
if os.path.exists(path):
    result = json.load(open(path, encoding="utf-8"))
result.setdefault("title", "Binary size and build time")
result.setdefault("order", 200)
result["levers"] = [r for r in result.get("levers", []) if r["label"] != row["label"]] + [row]
result["date"] = row["date"]
result["command"] = "scripts/bench/binary-size.sh LABEL [CARGO_ARGS...] (a row each)"
from importlib import util
spec = util.spec_from_file_location("page", "scripts/bench/write-benchmarks-page.py")
page = util.module_from_spec(spec)
spec.loader.exec_module(page)
result["machine"] = page.machine()
result["load"] = row["load"]
with open(path, "w", encoding="utf-8") as f:
    json.dump(result, f, indent=2, ensure_ascii=False)
    f.write("\n")
print(json.dumps(row, indent=1))
EOF
python3 scripts/bench/write-benchmarks-page.py
