#!/usr/bin/env bash
# SQL benchmarks on one profile (default: bench-data/jax_large.xplane.pb, 85 MB), release
# build, side by side in one run:
#  - the issue's GROUP BY over `slice`, cold (a new process: decode included) and warm in
#    `oxprof serve` (the second and later requests of the same query);
#  - `oxprof export --to parquet`: time and dataset size against the file's;
#  - DuckDB (Python package) running the same GROUP BY over the exported dataset.
# Prints a Markdown table; the machine's load average is printed with it (numbers on a
# shared machine vary: compare within one run).
#   OXPROF_BENCH_PROFILE=path  another profile   RUNS=5  repetitions
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
profile="${OXPROF_BENCH_PROFILE:-bench-data/jax_large.xplane.pb}"
[ -f "$profile" ] || profile="/work/main/bench-data/jax_large.xplane.pb"
runs="${RUNS:-5}"
venv="$HOME/.cache/oxprof-sql-venv"
cargo build --release -p oxprof --locked >/dev/null 2>&1 || cargo build --release -p oxprof
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
bin="$target_dir/release/oxprof"
sql='SELECT name, count(*), sum(dur) FROM slice GROUP BY name ORDER BY 3 DESC LIMIT 20'
work=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
secs() { python3 -c "import sys; print(f'{float(sys.argv[1]):.3f}')" "$1"; }
timed() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); python3 -c "print($e - $s)"; }
list() { python3 -c "import sys; v=sorted(float(x) for x in sys.argv[1:]); print(f'{v[0]:.3f}–{v[-1]:.3f} s (median {v[len(v)//2]:.3f})')" "$@"; }

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); profile $(du -m "$profile" | cut -f1) MB"
cold=(); for _ in $(seq "$runs"); do cold+=("$(timed "$bin" query "$sql" "$profile")"); done
rss=$( { /usr/bin/time -f '%M' "$bin" query "$sql" "$profile" >/dev/null; } 2>&1 | tail -1 )

"$bin" serve "$profile" --port 0 --quiet > "$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -qo 'http://[0-9.:]*' "$work/serve.log" && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$work/serve.log" | head -1)
enc=$(python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$sql")
first=$(timed curl -sf "$url/oxprof/api/query?sql=$enc")
warm=(); for _ in $(seq "$runs"); do warm+=("$(timed curl -sf "$url/oxprof/api/query?sql=$enc")"); done
kill "$server_pid"; server_pid=""

export_t=(); for i in $(seq "$runs"); do export_t+=("$(timed "$bin" export "$profile" --to parquet "$work/ds$i")"); done
size=$(du -sb "$work/ds1" | cut -f1); file=$(stat -c %s "$profile")

duck=$("$venv/bin/python" - "$work/ds1" "$sql" "$runs" <<'PY'
import sys, time, duckdb
ds, sql, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
times = []
for _ in range(runs):
    con = duckdb.connect()
    t = time.time()
    con.execute(f"CREATE VIEW slice AS SELECT * FROM read_parquet('{ds}/slice/*/*/*.parquet', hive_partitioning = true)")
    con.execute(sql).fetchall()
    times.append(time.time() - t)
times.sort()
print(f"{times[0]:.3f}–{times[-1]:.3f} s (median {times[len(times)//2]:.3f})")
PY
)
echo
echo "| | time |"
echo "| --- | ---: |"
echo "| \`oxprof query\` GROUP BY, cold process (decode included) | $(list "${cold[@]}"), peak RSS $((rss / 1024)) MiB |"
echo "| \`/oxprof/api/query\`, first request (server just started) | $(secs "$first") s |"
echo "| \`/oxprof/api/query\`, warm (curl, whole request) | $(list "${warm[@]}") |"
echo "| \`oxprof export --to parquet\` | $(list "${export_t[@]}"); dataset $((size / 1000000)) MB = $(python3 -c "print(f'{$size/$file:.2f}')")× the file |"
echo "| DuckDB $("$venv/bin/python" -c 'import duckdb; print(duckdb.__version__)') on the export, same GROUP BY (new connection) | $duck |"
