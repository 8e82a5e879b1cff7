#!/usr/bin/env bash
# SQL benchmarks on one profile (default: bench-data/jax_large.xplane.pb, 85 MB), release
# build, side by side in one run:
#  - representative queries through `oxprof query`, each a new process (cold: decode
#    included): wall time and peak RSS (/usr/bin/time);
#  - the issue's GROUP BY in `oxprof serve` (`/oxprof/api/query`): first request and warm
#    (the second and later requests of the same query, curl's whole request);
#  - `oxprof export --to parquet`: time and dataset size against the file's;
#  - DuckDB (Python package, the SQL readers' venv) running the same queries over the
#    exported dataset (new connection each time, views over the Hive dataset);
#  - peak RSS as the host count grows 1 → 4 (hard links of the profile under 4 host
#    names in a temporary run): the GROUP BY, count(*), a steps query and the export.
# Prints a Markdown table with the machine's load average before and after (numbers on a
# shared machine vary: compare within one run).
#   OXPROF_BENCH_PROFILE=path  another profile   RUNS=5  repetitions
#   OXPROF_BIN=path            an already built oxprof (skips the release build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
profile="${OXPROF_BENCH_PROFILE:-bench-data/jax_large.xplane.pb}"
[ -f "$profile" ] || profile="/work/main/bench-data/jax_large.xplane.pb"
[ -f "$profile" ] || { echo "bench-sql: no profile at $profile (scripts/gen/large-profile.sh makes it)" >&2; exit 1; }
runs="${RUNS:-5}"
venv="$HOME/.cache/oxprof-sql-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import duckdb' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'duckdb>=1,<3'
fi
if [ -n "${OXPROF_BIN:-}" ]; then
  bin="$OXPROF_BIN"
else
  cargo build --release -p oxprof --locked
  target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  bin="$target_dir/release/oxprof"
fi
groupby='SELECT name, count(*), sum(dur) FROM slice GROUP BY name ORDER BY 3 DESC LIMIT 20'
# label|SQL|whether DuckDB runs it too (the views are oxprof's)
queries=(
  "GROUP BY name over slice (the issue's)|$groupby|yes"
  "count(*) over slice|SELECT count(*) FROM slice|yes"
  "first 5 slices, every column|SELECT * FROM slice LIMIT 5|yes"
  "10 longest slices, every column (all 14 columns built)|SELECT * FROM slice ORDER BY dur DESC LIMIT 10|yes"
  "args per key|SELECT key, count(*) FROM args GROUP BY key ORDER BY 2 DESC LIMIT 10|yes"
  "step_ops view (slice ⋈ thread_track)|SELECT step, count(*) AS events, sum(dur) AS dur FROM step_ops GROUP BY step ORDER BY step|no"
  "op_stats (a tool table)|SELECT * FROM op_stats ORDER BY total_self_time DESC LIMIT 5|yes"
)
work=$(mktemp -d)
server_pid=""
cleanup() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi; rm -rf "$work"; }
trap cleanup EXIT
timed() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); python3 -c "print($e - $s)"; }
list() { python3 -c "import sys; v=sorted(float(x) for x in sys.argv[1:]); print(f'{v[0]:.3f}–{v[-1]:.3f} s (median {v[len(v)//2]:.3f})')" "$@"; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
rows=()
for entry in "${queries[@]}"; do
  IFS='|' read -r label sql _ <<<"$entry"
  times=(); peak=0
  for _ in $(seq "$runs"); do
    /usr/bin/time -o "$work/time" -f '%e %M' "$bin" query "$sql" "$profile" >/dev/null
    out=$(tail -1 "$work/time")
    times+=("${out% *}"); kb="${out#* }"; [ "$kb" -gt "$peak" ] && peak=$kb
  done
  rows+=("| \`oxprof query\`: $label | $(list "${times[@]}") | $((peak / 1024)) MiB |")
done

"$bin" serve "$profile" --port 0 --quiet > "$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -qo 'http://[0-9.:]*' "$work/serve.log" && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$work/serve.log" | head -1)
enc=$(python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$groupby")
first=$(timed curl -sf "$url/oxprof/api/query?sql=$enc")
warm=(); for _ in $(seq "$runs"); do warm+=("$(timed curl -sf "$url/oxprof/api/query?sql=$enc")"); done
server_rss=$(awk '/VmHWM/ {print int($2 / 1024)}' "/proc/$server_pid/status")
kill "$server_pid"; server_pid=""

export_t=(); export_rss=0
for i in $(seq "$runs"); do
  /usr/bin/time -o "$work/time" -f '%e %M' "$bin" export "$profile" --to parquet "$work/ds$i" 2>/dev/null
  out=$(tail -1 "$work/time")
  export_t+=("${out% *}"); kb="${out#* }"; [ "$kb" -gt "$export_rss" ] && export_rss=$kb
done
size=$(du -sb "$work/ds1" | cut -f1); file=$(stat -c %s "$profile")

# Hosts 1 → 4: hard links (a copy when the temporary directory is on another disk).
scale_rows=()
scale_queries=(
  "GROUP BY name over slice|$groupby"
  "count(*) over slice|SELECT count(*) FROM slice"
  "steps per host|SELECT host, count(*), avg(step_time_ms) FROM steps GROUP BY host"
)
for n in 1 4; do
  pod="$work/pod$n/plugins/profile/2026_01_01_00_00_00"
  mkdir -p "$pod"
  for i in $(seq 0 $((n - 1))); do ln "$profile" "$pod/host$i.xplane.pb" 2>/dev/null || cp "$profile" "$pod/host$i.xplane.pb"; done
done
peak_of() { /usr/bin/time -o "$work/time" -f '%e %M' "$@" >/dev/null 2>&1; tail -1 "$work/time"; }
for entry in "${scale_queries[@]}"; do
  IFS='|' read -r label sql <<<"$entry"
  one=$(peak_of "$bin" query "$sql" "$work/pod1"); four=$(peak_of "$bin" query "$sql" "$work/pod4")
  scale_rows+=("| \`oxprof query\`: $label | ${one% *} s, $((${one#* } / 1024)) MiB | ${four% *} s, $((${four#* } / 1024)) MiB |")
done
one=$(peak_of "$bin" export "$work/pod1" --to parquet "$work/pod1-ds"); four=$(peak_of "$bin" export "$work/pod4" --to parquet "$work/pod4-ds")
scale_rows+=("| \`oxprof export --to parquet\` | ${one% *} s, $((${one#* } / 1024)) MiB | ${four% *} s, $((${four#* } / 1024)) MiB |")

duck_queries=()
for entry in "${queries[@]}"; do
  IFS='|' read -r label sql duck <<<"$entry"
  [ "$duck" = yes ] && duck_queries+=("$label|$sql")
done
mapfile -t duck_rows < <("$venv/bin/python" - "$work/ds1" "$runs" "${duck_queries[@]}" <<'PY'
import os, sys, time, duckdb
ds, runs, entries = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for entry in entries:
    label, sql = entry.split("|", 1)
    times = []
    for _ in range(runs):
        t = time.time()
        con = duckdb.connect()
        for table in sorted(os.listdir(ds)):
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{ds}/{table}/**/*.parquet', hive_partitioning = true, hive_types_autocast = 0)")
        con.execute(sql).fetchall()
        times.append(time.time() - t)
        con.close()
    times.sort()
    print(f"| DuckDB {duckdb.__version__} on the export: {label} | {times[0]:.3f}–{times[-1]:.3f} s (median {times[len(times)//2]:.3f}) | |")
PY
)
echo "load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; profile $(du -m "$profile" | cut -f1) MB; $runs runs each"
echo
echo "| | wall | peak RSS |"
echo "| --- | ---: | ---: |"
printf '%s\n' "${rows[@]}"
echo "| \`/oxprof/api/query\` GROUP BY, first request (server just started) | $(python3 -c "print(f'{$first:.3f} s')") | $server_rss MiB (server, at the end) |"
echo "| \`/oxprof/api/query\` GROUP BY, warm (curl, whole request) | $(list "${warm[@]}") | |"
echo "| \`oxprof export --to parquet\` | $(list "${export_t[@]}"); dataset $((size / 1000000)) MB = $(python3 -c "print(f'{$size/$file:.2f}')")× the file | $((export_rss / 1024)) MiB |"
printf '%s\n' "${duck_rows[@]}"
echo
echo "Peak RSS as hosts grow (each host the $(du -m "$profile" | cut -f1) MB profile; the host file is $((file / 1048576)) MiB):"
echo
echo "| | 1 host | 4 hosts |"
echo "| --- | ---: | ---: |"
printf '%s\n' "${scale_rows[@]}"
