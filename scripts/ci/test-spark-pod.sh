#!/usr/bin/env bash
# Issue 42's pod job end to end: a generated pod in a local S3 server (SeaweedFS, from
# scripts/ci/objstore-servers.sh), one host file made corrupt and one deleted after
# `oxprof pod plan`, `oxprof pod run` (spark-submit of python/oxprof/spark.py) on a real
# Spark standalone cluster on 127.0.0.1 (scripts/ci/spark-cluster.sh: a master and two
# workers, not local mode), whose driver ends with `oxprof pod combine` (--combine), then:
#  1. overview_page, input_pipeline_analyzer, framework_op_stats, pod_viewer and
#     megascale_stats for ALL_HOSTS from the pod result directory are byte-identical to
#     `oxprof data` on one machine over a local run directory of the same good hosts;
#  2. the job finished, names both failed hosts (pod.json and its summary) and holds the others;
#  3. a host's drill-down from the pod result (trace_viewer, reading the host's profile in S3
#     that pod.json names, allowed by --pod-sources) is byte-identical to its own file's;
#  4. each host's oxprof process peaked at ≤ 1.5x its host file + the floor of that process
#     (the peak RSS of `oxprof pod partial` on a near-empty host from the same bucket,
#     measured here: the binary, its runtimes and the object-store client, whatever the
#     file's size); the driver's combine (`oxprof pod combine`) wrote ALL_HOSTS.oxcombined,
#     and its peak RSS is printed beside one machine's and an answer's from the pod result.
# Then the job's mechanics tests (python/tests/test_spark.py, a stand-in binary, local mode).
# Everything started here is stopped at exit; the servers and the cluster also stop by
# themselves (watchdogs).
#   OXPROF_BIN=path        the oxprof binary (default: cargo build -p oxprof, debug)
#   SPARK_POD_HOSTS=N      hosts (default 256)
#   SPARK_POD_HOST_MB=M    MB per host file (default 0.5)
#   SPARK_POD_RSS_FACTOR=F  the per-host bound's factor on the pod's hosts (default 1.5, issue
#                          42's; the two larger hosts' job is held to 1.5x always)
#   SPARK_POD_LARGE_MB=M   MB per host of the two-host job that checks the per-host memory
#                          bound where it means something (default 16)
#   SPARK_POD_OPS_PER_STEP=N  ops per step of the generated program (default 1024)
#   GEN_POD_BIN=path       the gen_pod example (default: cargo build --workspace --example gen_pod)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
step() { printf '\n--- spark pod: %s (%s)\n' "$*" "$(date +%H:%M:%S)"; }
fail() { echo "test-spark-pod: FAILED: $*" >&2; exit 1; }
began=$(date +%s)

hosts=${SPARK_POD_HOSTS:-256}
rss_factor=${SPARK_POD_RSS_FACTOR:-1.5}
host_mb=${SPARK_POD_HOST_MB:-0.5}
large_mb=${SPARK_POD_LARGE_MB:-16}
((hosts >= 4)) || fail "SPARK_POD_HOSTS must be at least 4"
work=$(mktemp -d)
cluster_pid=
cleanup() {
  [[ -n $cluster_pid ]] && wait "$cluster_pid" 2>/dev/null
  scripts/ci/spark-cluster.sh stop "$work/cluster" || true
  scripts/ci/objstore-servers.sh stop "$work/servers" || true
  rm -rf "$work"
}
trap cleanup EXIT

step "cluster (starting in the background)"
SPARK_CLUSTER_MINUTES=${SPARK_CLUSTER_MINUTES:-20} scripts/ci/spark-cluster.sh start "$work/cluster" >"$work/cluster.log" 2>&1 &
cluster_pid=$!

target_dir() { cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])'; }
if [[ -z ${OXPROF_BIN:-} ]]; then
  step "build oxprof"
  cargo build -p oxprof --locked
  OXPROF_BIN=$(target_dir)/debug/oxprof
fi
if [[ -z ${GEN_POD_BIN:-} ]]; then
  step "build gen_pod"
  # --workspace: the test build's features, so only the example itself compiles.
  cargo build --workspace --example gen_pod --locked
  GEN_POD_BIN=$(target_dir)/debug/examples/gen_pod
fi
bin=$OXPROF_BIN

step "generate a $hosts-host pod, $host_mb MB per host"
# 1,024 ops per step: 7 steps per 0.5 MB host (8,192, the default, would leave one).
"$GEN_POD_BIN" "$work/gen" --hosts "$hosts" --host-mb "$host_mb" --ops-per-step "${SPARK_POD_OPS_PER_STEP:-1024}" >/dev/null
"$GEN_POD_BIN" "$work/floor" --hosts 1 --host-mb 0.01 --no-plants >/dev/null
# Two larger hosts for the per-host memory bound (on the pod's small hosts the bound's slack,
# 1.5x 0.5 MB, is below the noise of a process's RSS).
"$GEN_POD_BIN" "$work/large" --hosts 2 --host-mb "$large_mb" >/dev/null
run_rel=plugins/profile/2026_01_01_00_00_00
mapfile -t files < <(cd "$work/gen/$run_rel" && ls)
((${#files[@]} == hosts)) || fail "gen_pod wrote ${#files[@]} files, expected $hosts"
host_of() { local f=${1##*/}; echo "${f%.xplane.pb}"; }
corrupt=${files[1]}; deleted=${files[$((hosts - 2))]}
echo "$(du -sh "$work/gen" | cut -f1) in $hosts files; to be made corrupt: $(host_of "$corrupt"), deleted: $(host_of "$deleted")"

step "S3 server, upload"
scripts/ci/objstore-servers.sh start "$work/servers" >/dev/null
# (The cluster, started before this, runs without the S3 settings: the job forwards them.)
# shellcheck disable=SC1091
source "$work/servers/env"
sig=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY")
upload() { # local dir, key prefix
  (cd "$1" && find . -type f -printf '%P\n') | xargs -P 4 -I{} curl -sf "${sig[@]}" -T "$1/{}" "$OXPROF_TEST_S3_ENDPOINT/oxprof/$2/{}"
}
upload "$work/gen" ci/pod || fail "upload"
upload "$work/floor" ci/floor || fail "upload"
upload "$work/large" ci/large || fail "upload"
# ... with the near-empty host beside them: the floor as the executors measure it.
curl -sf "${sig[@]}" -T "$work/floor/$run_rel/tpu-pod-host-000.xplane.pb" \
  "$OXPROF_TEST_S3_ENDPOINT/oxprof/ci/large/$run_rel/floor-host.xplane.pb" || fail "upload"
source_url=s3://oxprof/ci/pod/$run_rel

# The job is given this plan (--plan): the deleted host is in it, as a host whose file
# disappears between the listing and its task would be.
step "oxprof pod plan; then one host file made corrupt, one deleted"
"$bin" pod plan "$source_url" --format json >"$work/plan.json" || fail "oxprof pod plan"
planned=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["hosts"]))' "$work/plan.json")
[[ $planned == "$hosts" ]] || fail "the plan has $planned hosts, expected $hosts"
# Corrupt: the first 4 KB overwritten with 0xff (no protobuf field starts so), cut to half.
python3 - "$work/gen/$run_rel/$corrupt" "$work/corrupt.xplane.pb" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write((b"\xff" * 4096 + data[4096:])[: len(data) // 2])
PY
curl -sf "${sig[@]}" -T "$work/corrupt.xplane.pb" "$OXPROF_TEST_S3_ENDPOINT/oxprof/ci/pod/$run_rel/$corrupt" || fail "corrupt upload"
curl -sf "${sig[@]}" -X DELETE "$OXPROF_TEST_S3_ENDPOINT/oxprof/ci/pod/$run_rel/$deleted" || fail "delete"
# The same good hosts on local disk, for the one-machine answers.
mkdir -p "$work/local/$run_rel"
for f in "${files[@]}"; do
  [[ $f == "$corrupt" || $f == "$deleted" ]] || ln "$work/gen/$run_rel/$f" "$work/local/$run_rel/$f"
done

step "oxprof.spark on the 2-worker cluster"
wait "$cluster_pid" || { cat "$work/cluster.log"; fail "the cluster did not start"; }
cluster_pid=
cat "$work/cluster.log"
# shellcheck disable=SC1091
source "$work/cluster/env"
job_began=$(date +%s%N)
# What a user runs: `oxprof pod run` hands the job to spark-submit with this oxprof for the executors.
"$bin" pod run "$source_url" "$work/pod-result" --master "$SPARK_MASTER_URL" --conf spark.executor.memory=512m \
  --spark-submit "$SPARK_SUBMIT" --job python/oxprof/spark.py -- --plan "$work/plan.json" --format json --combine \
  >"$work/job.json" 2>"$work/job.err" || { cat "$work/job.err"; fail "the job failed"; }
job_ms=$((($(date +%s%N) - job_began) / 1000000))
cat "$work/job.json"
python3 - "$work/job.json" "$work/pod-result/pod.json" "$hosts" "$(host_of "$corrupt")" "$(host_of "$deleted")" "$SPARK_MASTER_URL" <<'PY' || fail "the pod result"
import json, sys
summary, manifest = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
hosts, corrupt, deleted, master = int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
assert manifest["format"] == "oxprof-pod" and manifest["version"] == 1, manifest["format"]
assert manifest["engine"] == {"kind": "spark", "master": master, "executors": 2}, manifest["engine"]
failed = {f["host"]: f["error"] for f in manifest["failed"]}
assert set(failed) == {corrupt, deleted}, f"failed: {failed}"
assert [f["host"] for f in summary["failed"]] == sorted([corrupt, deleted]), summary["failed"]
assert len(manifest["hosts"]) == hosts - 2 == summary["hosts"], (len(manifest["hosts"]), summary["hosts"])
assert not {h["host"] for h in manifest["hosts"]} & {corrupt, deleted}
combined = summary["combine"]
assert combined and combined["ok"], f"the driver's combine: {combined}"
print(f"the driver's combine: {combined['seconds']:.1f} s, peak RSS {combined['peak_rss_bytes'] / 1e6:.1f} MB")
for host, error in sorted(failed.items()):
    assert "\n" not in error and host in error, f"{host}: {error!r} should be one line naming the host's file"
    print(f"failed as expected: {host}: {error}")
print(f"{len(manifest['hosts'])} hosts in the pod result")
PY
[[ -f $work/pod-result/ALL_HOSTS.oxcombined ]] || fail "the job did not write the pod's combine (ALL_HOSTS.oxcombined)"

step "ALL_HOSTS answers: the pod result vs one machine"
# XProf's body (what the UI draws) and oxprof's typed report (--format report), for each tool.
# One machine computes its 256 host analyses once, for the first answer, and the others read
# them from a persistent cache of this test's own (analyses round-trip exactly, as partials
# do): recomputed for each of the 10 answers, they took 70 s an answer with CI's wheel-ci build.
one_machine_cache="$work/one-machine-cache"
for tool in overview_page input_pipeline_analyzer framework_op_stats pod_viewer megascale_stats; do
  for format in xprof report; do
    args=(); [[ $format == report ]] && args=(--format report)
    "$bin" data "$tool" --host ALL_HOSTS "$work/pod-result" --no-cache "${args[@]}" >"$work/$tool.pod" 2>"$work/$tool.pod.err" \
      || fail "$tool from the pod result: $(cat "$work/$tool.pod.err")"
    "$bin" data "$tool" --host ALL_HOSTS "$work/local/$run_rel" --cache-dir "$one_machine_cache" "${args[@]}" >"$work/$tool.local" 2>"$work/$tool.local.err" \
      || fail "$tool on one machine: $(cat "$work/$tool.local.err")"
    cmp -s "$work/$tool.pod" "$work/$tool.local" || fail "$tool ($format) differs between the pod result and one machine"
    echo "$tool ($format): identical ($(wc -c <"$work/$tool.pod") bytes)"
  done
done
# The answer from the pod result names the failed hosts (oxprof's notes, on stderr).
for host in "$(host_of "$corrupt")" "$(host_of "$deleted")"; do
  grep -q "$host: not in this pod result" "$work/megascale_stats.pod.err" \
    || fail "the answer from the pod result does not name the failed host $host (stderr: $(head -c 300 "$work/megascale_stats.pod.err"))"
done
echo "the answers' notes name both failed hosts"

step "per-host drill-down: a host's events from the profile pod.json names (S3)"
drill_host=$(host_of "${files[0]}")
if "$bin" data trace_viewer@ --host "$drill_host" "$work/pod-result" --no-cache >"$work/drill.refused" 2>"$work/drill.err"; then
  fail "the pod result's host was read from S3 without --pod-sources"
fi
grep -q -- "--pod-sources" "$work/drill.err" || fail "the refusal does not name --pod-sources: $(cat "$work/drill.err")"
"$bin" data trace_viewer@ --host "$drill_host" "$work/pod-result" --no-cache --pod-sources "s3://oxprof/ci/pod" \
  >"$work/drill.pod" 2>"$work/drill.err" || fail "drill-down: $(cat "$work/drill.err")"
"$bin" data trace_viewer@ --host "$drill_host" "$work/local/$run_rel" --no-cache >"$work/drill.local" \
  || fail "trace_viewer on one machine"
cmp -s "$work/drill.pod" "$work/drill.local" || fail "the drill-down's trace differs from the host file's"
echo "trace_viewer for $drill_host from the pod result (its profile read from S3): identical ($(wc -c <"$work/drill.pod") bytes)"

step "memory"
"$bin" pod plan "s3://oxprof/ci/floor/$run_rel" --format json >"$work/floor-plan.json"
floor_url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hosts"][0]["source"])' "$work/floor-plan.json")
floor_kb=0
for _ in 1 2 3; do # the largest of three: the floor is an allowance
  rm -f "$work/floor.oxpartial"
  kb=$(/usr/bin/time -f %M "$bin" pod partial "$floor_url" --out "$work/floor.oxpartial" 2>&1 >/dev/null | tail -1)
  ((kb > floor_kb)) && floor_kb=$kb
done
floor_file=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hosts"][0]["bytes"])' "$work/floor-plan.json")
memory_ok=1
python3 - "$work/pod-result/pod.json" "$((floor_kb * 1024))" "$floor_file" "$rss_factor" <<'PY' || memory_ok=0
import json, sys
manifest, floor, floor_file, factor = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
worst = max(manifest["hosts"], key=lambda h: (h["peak_rss_bytes"] - floor) / h["source_bytes"])
over = [h for h in manifest["hosts"] if h["peak_rss_bytes"] > factor * h["source_bytes"] + floor]
print(f"floor (oxprof pod partial on a {floor_file / 1e3:.0f} kB host, the largest of 3): {floor / 1e6:.1f} MB")
print(f"per host: peak RSS {min(h['peak_rss_bytes'] for h in manifest['hosts']) / 1e6:.1f}-"
      f"{max(h['peak_rss_bytes'] for h in manifest['hosts']) / 1e6:.1f} MB for files of "
      f"{min(h['source_bytes'] for h in manifest['hosts']) / 1e6:.2f}-{max(h['source_bytes'] for h in manifest['hosts']) / 1e6:.2f} MB; "
      f"worst (RSS - floor) / file: {(worst['peak_rss_bytes'] - floor) / worst['source_bytes']:.2f}x ({worst['host']})")
partials = sum(h["partial_bytes"] for h in manifest["hosts"])
print(f"partials: {partials / 1e6:.1f} MB in all, {partials / sum(h['source_bytes'] for h in manifest['hosts']):.3f}x the host files")
if over:
    print(f"{len(over)} hosts over {factor:g}x their file + the floor, e.g. "
          + ", ".join(f"{h['host']}: {h['peak_rss_bytes'] / 1e6:.1f} MB for {h['source_bytes'] / 1e6:.2f} MB" for h in over[:3]))
sys.exit(1 if over else 0)
PY
# The bound where it means something: a job of two ${large_mb} MB hosts on the same cluster.
"$bin" pod run "s3://oxprof/ci/large/$run_rel" "$work/large-result" --master "$SPARK_MASTER_URL" \
  --conf spark.executor.memory=512m --spark-submit "$SPARK_SUBMIT" --job python/oxprof/spark.py -- --format json \
  >"$work/large-job.json" 2>"$work/large-job.err" || { cat "$work/large-job.err"; fail "the larger hosts' job failed"; }
python3 - "$work/large-result/pod.json" "$((floor_kb * 1024))" <<'PY' || memory_ok=0
import json, sys
manifest, floor_here = json.load(open(sys.argv[1])), int(sys.argv[2])
hosts = {h["host"]: h for h in manifest["hosts"]}
assert len(hosts) == 3 and not manifest["failed"], manifest
# The floor as an executor measures it (the same process, environment and sampling), the
# larger of it and the script's own.
floor = max(hosts.pop("floor-host")["peak_rss_bytes"], floor_here)
print(f"the executors' floor (the near-empty host in the same job): {floor / 1e6:.1f} MB")
over = False
for h in hosts.values():
    above = (h["peak_rss_bytes"] - floor) / h["source_bytes"]
    print(f"{h['host']}: peak RSS {h['peak_rss_bytes'] / 1e6:.1f} MB for a {h['source_bytes'] / 1e6:.1f} MB file: "
          f"{h['peak_rss_bytes'] / h['source_bytes']:.2f}x the file, {above:.2f}x above the floor")
    over |= h["peak_rss_bytes"] > 1.5 * h["source_bytes"] + floor
sys.exit(1 if over else 0)
PY
combine_kb=$(/usr/bin/time -f %M "$bin" data overview_page --host ALL_HOSTS "$work/pod-result" --no-cache 2>&1 >/dev/null | tail -1)
one_kb=$(/usr/bin/time -f %M "$bin" data overview_page --host ALL_HOSTS "$work/local/$run_rel" --no-cache 2>&1 >/dev/null | tail -1)
echo "overview_page for ALL_HOSTS: from the pod result (its combine file) peak RSS $((combine_kb / 1024)) MB; one machine over the host files: $((one_kb / 1024)) MB"

[[ $memory_ok == 1 ]] || echo "test-spark-pod: over the memory bound (above); checking the rest first"

step "job mechanics (python/tests/test_spark.py: a stand-in binary, local mode)"
"$PYSPARK_PYTHON" -c 'import pytest' 2>/dev/null || "$PYSPARK_PYTHON" -m pip install -q --disable-pip-version-check pytest==9.2.0
"$PYSPARK_PYTHON" -m pytest -q -p no:cacheprovider python/tests/test_spark.py

[[ $memory_ok == 1 ]] || fail "an executor's oxprof held more than ${rss_factor}x its host file + the floor (see the memory step)"
step "passed: the job took $((job_ms / 1000)).$(printf %03d $((job_ms % 1000))) s for $hosts hosts; the whole test $(($(date +%s) - began)) s"
