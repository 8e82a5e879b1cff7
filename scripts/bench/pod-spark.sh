#!/usr/bin/env bash
# Issue 42's timing: a generated pod of 16, 64 and 256 hosts, ALL_HOSTS overview_page
#   one machine:   `oxprof data overview_page --host ALL_HOSTS RUN_DIR --no-cache` (wall, peak RSS)
#   the cluster:   oxprof.spark on a 2-worker Spark standalone cluster on 127.0.0.1
#                  (scripts/ci/spark-cluster.sh; spark-submit's wall time, with its plan,
#                  compute and gather phases and the driver's combine, and the largest per-host
#                  peak RSS), then the answer `oxprof data overview_page --host ALL_HOSTS POD_DIR --no-cache`
#                  (wall, peak RSS)
# Both read the same host files from local disk (the page cache: they have just been
# written), so the comparison is of the engines, not of a storage server. The 16- and 64-host
# runs are the first hosts of the 256-host pod (hard links). Writes
# docs/bench-results/pod-spark.json (date, machine, load before and after) and rewrites
# docs/benchmarks.md.
#
#   scripts/bench/pod-spark.sh [HOST_MB]     MB per host file (default 4)
#   OXPROF_BIN=...     the binary (default: target/release/oxprof, built when missing)
#   GEN_POD_BIN=...    gen_pod (default: cargo build --release -p oxprof-testkit --example gen_pod)
#   POD_SPARK_HOSTS="16 64 256"   the host counts
#   POD_SPARK_DATA=DIR where the pod is generated (default bench-data/pod-spark-<MB>mb; kept)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
host_mb=${1:-4}
counts=(${POD_SPARK_HOSTS:-16 64 256})
max_hosts=${counts[-1]}
target=${CARGO_TARGET_DIR:-$root/target}
oxprof=${OXPROF_BIN:-$target/release/oxprof}
[[ -x $oxprof ]] || cargo build --release -p oxprof --locked >&2
if [[ -z ${GEN_POD_BIN:-} ]]; then
  cargo build --release -p oxprof-testkit --example gen_pod --locked >&2
  GEN_POD_BIN=$target/release/examples/gen_pod
fi
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
date_utc=$(date -u '+%Y-%m-%d %H:%M UTC')

data=${POD_SPARK_DATA:-$root/bench-data/pod-spark-${host_mb}mb}
run_rel=plugins/profile/2026_01_01_00_00_00
if [[ ! -d $data/$run_rel ]] || (($(ls "$data/$run_rel" | wc -l) != max_hosts)); then
  [[ ! -e $data ]] || { echo "pod-spark: $data exists but is not a $max_hosts-host pod; remove it or set POD_SPARK_DATA" >&2; exit 2; }
  echo "pod-spark: generating $max_hosts hosts x $host_mb MB into $data" >&2
  "$GEN_POD_BIN" "$data" --hosts "$max_hosts" --host-mb "$host_mb" >/dev/null
fi

scratch=$(mktemp -d)
cleanup() { scripts/ci/spark-cluster.sh stop "$scratch/cluster" || true; rm -rf "$scratch"; }
trap cleanup EXIT
SPARK_CLUSTER_MINUTES=${SPARK_CLUSTER_MINUTES:-60} scripts/ci/spark-cluster.sh start "$scratch/cluster" >&2
# shellcheck disable=SC1091
source "$scratch/cluster/env"

timed() { # out-file, command...: "<wall s> <peak RSS kB>" into out-file, stdout into out-file.stdout
  local out=$1; shift
  /usr/bin/time -f '%e %M' -o "$out" "$@" >"$out.stdout"
}
rows=$scratch/rows.jsonl
mapfile -t all < <(ls "$data/$run_rel" | sort)
for n in "${counts[@]}"; do
  run="$scratch/run-$n/$run_rel"
  mkdir -p "$run"
  for f in "${all[@]:0:n}"; do ln "$data/$run_rel/$f" "$run/$f" 2>/dev/null || cp "$data/$run_rel/$f" "$run/$f"; done
  sync
  echo "pod-spark: $n hosts" >&2
  timed "$scratch/one.$n" "$oxprof" data overview_page --host ALL_HOSTS "$run" --no-cache
  timed "$scratch/job-time.$n" "$SPARK_SUBMIT" --master "$SPARK_MASTER_URL" --conf spark.executor.memory=512m \
    python/oxprof/spark.py "$run" "$scratch/pod-$n" --oxprof "$oxprof" --format json
  timed "$scratch/combine.$n" "$oxprof" data overview_page --host ALL_HOSTS "$scratch/pod-$n" --no-cache
  "$oxprof" data overview_page --host ALL_HOSTS "$run" --no-cache >"$scratch/one.$n.json"
  "$oxprof" data overview_page --host ALL_HOSTS "$scratch/pod-$n" --no-cache >"$scratch/pod.$n.json"
  cmp -s "$scratch/one.$n.json" "$scratch/pod.$n.json" || { echo "pod-spark: the $n-host answers differ" >&2; exit 1; }
  python3 - "$n" "$run" "$scratch" >>"$rows" <<'PY'
import json, os, sys
n, run, scratch = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def timing(name):
    wall, kb = open(os.path.join(scratch, f"{name}.{n}")).read().split()[-2:]
    return float(wall), int(kb) * 1024
manifest = json.load(open(os.path.join(scratch, f"pod-{n}", "pod.json")))
hosts = manifest["hosts"]
one_s, one_rss = timing("one")
job_s, _ = timing("job-time")
job = json.load(open(os.path.join(scratch, f"job-time.{n}.stdout")))
combine_s, combine_rss = timing("combine")
files = [os.path.getsize(os.path.join(run, f)) for f in os.listdir(run)]
print(json.dumps({
    "hosts": n, "total_mb": round(sum(files) / 1e6, 1), "largest_host_mb": round(max(files) / 1e6, 2),
    "one_machine_s": one_s, "one_machine_rss_mb": round(one_rss / 1e6, 1),
    "job_s": job_s, "combine_s": combine_s, "combine_rss_mb": round(combine_rss / 1e6, 1),
    "cluster_s": round(job_s + combine_s, 2),
    "plan_s": job["plan_seconds"], "compute_s": job["compute_seconds"], "gather_s": job["gather_seconds"],
    "task_s_sum": round(sum(h["seconds"] for h in hosts), 2),
    "task_s_max": max(h["seconds"] for h in hosts),
    "task_rss_max_mb": round(max(h["peak_rss_bytes"] for h in hosts) / 1e6, 1),
    "task_rss_max_ratio": round(max(h["peak_rss_bytes"] / h["source_bytes"] for h in hosts), 2),
    "partials_mb": round(sum(h["partial_bytes"] for h in hosts) / 1e6, 2),
    "failed": len(manifest["failed"]), "executors": manifest["engine"]["executors"],
}))
PY
  rm -rf "$scratch/pod-$n" "$scratch/run-$n"
done

python3 - "$rows" "$host_mb" "$load_before" "$date_utc" "$*" <<'PY'
import importlib.util, json, os, sys
rows_file, host_mb, load_before, date_utc, args = sys.argv[1:6]
spec = importlib.util.spec_from_file_location("page", "scripts/bench/write-benchmarks-page.py")
page = importlib.util.module_from_spec(spec)
spec.loader.exec_module(page)
rows = [json.loads(line) for line in open(rows_file)]
largest = rows[-1]
result = {
    "title": "Pods on Spark (issue 42)",
    "order": 35,
    "command": "scripts/bench/pod-spark.sh" + (f" {args}" if args else ""),
    "date": date_utc,
    "machine": page.machine(),
    "load": f"{load_before} before, {page.load_average()} after",
    "host_mb": float(host_mb),
    "pod_spark": rows,
    "glance": [[f"{largest['hosts']}-host generated pod ({largest['total_mb']:.0f} MB), ALL_HOSTS overview_page",
                f"one machine {largest['one_machine_s']:.1f} s; 2-worker Spark {largest['job_s']:.1f} s + "
                f"answer {largest['combine_s']:.2f} s"]],
}
path = os.path.join("docs", "bench-results", "pod-spark.json")
with open(path, "w", encoding="utf-8") as f:
    json.dump(result, f, indent=2, ensure_ascii=False)
    f.write("\n")
for r in rows:
    print(json.dumps(r))
print(f"recorded {path}", file=sys.stderr)
PY
python3 scripts/bench/write-benchmarks-page.py
