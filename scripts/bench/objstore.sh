#!/usr/bin/env bash
# Object-store logdirs, measured side by side on this machine (release build, servers on
# 127.0.0.1 started by scripts/ci/objstore-servers.sh):
#   1. overview_page of the 85 MB profile, cold process: local file vs s3:// (no caches)
#   2. the read path's MB/s (RemoteStore, parallel ranged GETs) vs curl of the same object,
#      from S3 and from GCS (fake-gcs-server)
#   3. decode overlapping the download: overview_page of the gzipped profile from s3://,
#      streaming (default) vs download-then-decode (OXPROF_OBJSTORE_NO_OVERLAP=1), and local
#   4. /run_tools of one run in a 1,000-run s3:// logdir (a fresh server: listing included)
#   5. /runs of a 10,000-run s3:// logdir: a new listing (calls 2.2 s apart, past the rescan
#      interval) and within the interval (answered from the latest listing; LIST requests
#      counted by the server), beside the listing alone (list_bench) and curl paging through
#      the same ListObjectsV2 pages
#   PROFILE=FILE   default bench-data/jax_large.xplane.pb (scripts/gen/large-profile.sh)
#   ROUNDS=5       cold runs of each in 1.
#   OXPROF_BIN=F   the oxprof binary to measure (default: target/release/oxprof, built here)
#   SKIP_BUILD=1   use the release binaries already built
# Each section prints the machine's load average: on a shared machine, numbers taken at a
# load above its core count are several times the quiet ones.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
profile=${PROFILE:-bench-data/jax_large.xplane.pb}
rounds=${ROUNDS:-5}
[[ -f $profile ]] || { echo "bench-objstore: $profile is missing; run scripts/gen/large-profile.sh" >&2; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  scripts/ci/objstore-servers.sh stop "$work/servers" || true
  rm -rf "$work"
}
trap cleanup EXIT
scripts/ci/objstore-servers.sh start "$work/servers" >/dev/null
# shellcheck disable=SC1091
source "$work/servers/env"
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  [[ -n ${OXPROF_BIN:-} ]] || cargo build --release --locked -p oxprof --bin oxprof 2>/dev/null
  cargo build --release --locked -p oxprof-objstore --example read_bench --example list_bench 2>/dev/null
fi
bin=${OXPROF_BIN:-$PWD/target/release/oxprof}
load() { echo "   (load average $(cut -d' ' -f1-3 /proc/loadavg))"; }
requests() { # SeaweedFS's count of the bucket's S3 requests of a type
  curl -sf "$OXPROF_TEST_S3_METRICS" | awk -v type="$1" \
    '/^SeaweedFS_s3_request_total\{/ && index($0, "bucket=\"oxprof\"") && index($0, "type=\"" type "\"") {n += $NF} END {print n + 0}'
}
sign=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY")
put() { curl -sf "${sign[@]}" -T "$1" "$OXPROF_TEST_S3_ENDPOINT/oxprof/$2"; }
seconds() { python3 -c 'import subprocess,sys,time; s=time.perf_counter(); subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,check=True); print(f"{time.perf_counter()-s:.3f}")' "$@"; }
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); oxprof: $bin"

put "$profile" "bench/large/plugins/profile/run/host.xplane.pb"
echo "1. overview_page of $(stat -c %s "$profile") bytes, cold process, --no-cache (local | s3://), alternating:"
load
for _ in $(seq 1 "$rounds"); do
  l=$(seconds "$bin" data overview_page "$profile" --no-cache)
  r=$(seconds "$bin" data overview_page s3://oxprof/bench/large --no-cache)
  echo "   local $l s | s3 $r s"
done

echo "2. read path vs curl, the same object (MB = 10^6 bytes):"
load
for _ in $(seq 1 "$rounds"); do # alternating, so both see the same machine
  curl -sf "${sign[@]}" -o /dev/null -w '%{size_download} %{time_total}\n' \
    "$OXPROF_TEST_S3_ENDPOINT/oxprof/bench/large/plugins/profile/run/host.xplane.pb" \
    | awk '{printf "   curl: %d bytes in %.3f s: %.0f MB/s\n", $1, $2, $1 / $2 / 1e6}'
  target/release/examples/read_bench s3://oxprof/bench/large/plugins/profile/run/host.xplane.pb 1 | sed 's/^/   oxprof: /'
done
curl -sf -X POST --data-binary @"$profile" \
  "$OXPROF_TEST_GCS_ENDPOINT/upload/storage/v1/b/oxprof/o?uploadType=media&name=bench/large.xplane.pb" >/dev/null
for _ in 1 2 3; do
  curl -sf -o /dev/null -w '   curl (GCS): %{size_download} bytes in %{time_total} s: %{speed_download} B/s\n' \
    "$OXPROF_TEST_GCS_ENDPOINT/oxprof/bench/large.xplane.pb"
done
target/release/examples/read_bench gs://oxprof/bench/large.xplane.pb 3 | sed 's/^/   oxprof (GCS): /'

echo "3. the gzipped profile decoded (release read_bench load): from s3 streaming, local file | s3 whole first:"
load
gzip -1 -c "$profile" >"$work/large.xplane.pb.gz"
put "$work/large.xplane.pb.gz" "bench/largegz1/host.xplane.pb.gz"
for _ in $(seq 1 "$rounds"); do
  LOCAL=$work/large.xplane.pb.gz target/release/examples/read_bench s3://oxprof/bench/largegz1/host.xplane.pb.gz 1 load \
    | sed 's/^/   streaming: /'
  OXPROF_OBJSTORE_NO_OVERLAP=1 target/release/examples/read_bench s3://oxprof/bench/largegz1/host.xplane.pb.gz 1 load \
    | sed 's/^/   whole first: /'
done
echo "   and overview_page of it, cold process, --no-cache: local | s3 streaming | s3 download-then-decode:"
put "$work/large.xplane.pb.gz" "bench/largegz/plugins/profile/run/host.xplane.pb.gz"
for _ in $(seq 1 "$rounds"); do
  l=$(seconds "$bin" data overview_page "$work/large.xplane.pb.gz" --no-cache)
  r=$(seconds "$bin" data overview_page s3://oxprof/bench/largegz --no-cache)
  w=$(OXPROF_OBJSTORE_NO_OVERLAP=1 seconds "$bin" data overview_page s3://oxprof/bench/largegz --no-cache)
  echo "   local $l s | s3 streaming $r s | s3 whole first $w s"
done

tiny=testdata/hlo-costs/hand_dot.xplane.pb
upload_runs() { # prefix, count
  seq -f "%05g" 1 "$2" | xargs -P 8 -I{} curl -sf "${sign[@]}" -T "$tiny" \
    "$OXPROF_TEST_S3_ENDPOINT/oxprof/$1/plugins/profile/run_{}/host.xplane.pb"
}
serve() { # logdir → sets $url to the server's URL
  "$bin" serve "$1" --port 0 --quiet --no-cache >"$work/serve.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do grep -q "http://" "$work/serve.out" && break; sleep 0.1; done
  url=$(grep -o "http://[^ ]*" "$work/serve.out" | head -1)
  url=${url%/}
}
upload_runs bench/runs1k 1000
serve s3://oxprof/bench/runs1k
echo "4. 1,000-run logdir, fresh server:"
load
curl -sf -o /dev/null -w '   first /run_tools (listing + one host read): %{time_total} s\n' "$url/run_tools?run=run_00500"
curl -sf -o /dev/null -w '   next /run_tools: %{time_total} s\n' "$url/run_tools?run=run_00501"
curl -sf -o /dev/null -w '   /runs (a new listing): %{time_total} s\n' "$url/runs"

upload_runs bench/runs10k 10000
serve s3://oxprof/bench/runs10k
echo "5. 10,000-run logdir:"
load
for _ in 1 2 3; do
  sleep 2.2 # past the rescan interval: this call lists the bucket
  lists=$(requests LIST)
  curl -sf -o "$work/runs.json" -w '   /runs, a new listing: %{time_total} s' "$url/runs"
  echo " ($(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$work/runs.json") runs, $(($(requests LIST) - lists)) LIST requests)"
  lists=$(requests LIST)
  curl -sf -o /dev/null -w '   /runs again at once: %{time_total} s' "$url/runs"
  echo " ($(($(requests LIST) - lists)) LIST requests)"
done
target/release/examples/list_bench s3://oxprof/bench/runs10k 3 | sed 's/^/   RemoteStore: /'
OXPROF_OBJSTORE_PARALLEL_LIST=1 target/release/examples/list_bench s3://oxprof/bench/runs10k 3 \
  | sed 's/^/   RemoteStore, key ranges in parallel: /'
for _ in 1 2 3; do
  python3 - "$OXPROF_TEST_S3_ENDPOINT" "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" <<'PY'
import re, subprocess, sys, time, urllib.parse
endpoint, user = sys.argv[1], sys.argv[2]
start, token, keys, pages = time.perf_counter(), None, 0, 0
while True:
    query = "list-type=2&prefix=bench%2Fruns10k%2F" + (f"&continuation-token={urllib.parse.quote(token, safe='')}" if token else "")
    page = subprocess.run(["curl", "-sf", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", user, f"{endpoint}/oxprof?{query}"],
                          capture_output=True, text=True, check=True).stdout
    keys += page.count("<Key>"); pages += 1
    found = re.search(r"<NextContinuationToken>([^<]*)<", page)
    if not found:
        break
    token = found.group(1)
print(f"   curl paging: {keys} keys in {pages} pages, {time.perf_counter() - start:.3f} s")
PY
done
