#!/usr/bin/env bash
# Checks that oxprof's Perfetto traces (megascale_stats with perfetto=true) read as Perfetto
# traces with Perfetto's own schema: each host of the synthetic megascale runs is written by
# `oxprof data`, gunzipped and parsed with the `perfetto` package's `perfetto_trace_pb2`, and
# must serialize back to the same bytes (no field outside or against Perfetto's schema).
# (trace_processor itself is not used: its Python wrapper downloads a binary from outside
# PyPI.) The venv is cached at ~/.cache/oxprof-perfetto/venv (perfetto 0.59.1, ~10 s cold).
#   OXPROF_BIN   the oxprof binary (default: target/debug/oxprof, built here if missing)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$HOME/.cache/oxprof-perfetto/venv"
if ! "$VENV/bin/python" -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2' 2>/dev/null; then
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q perfetto==0.59.1 protobuf
fi
BIN="${OXPROF_BIN:-$ROOT/target/debug/oxprof}"
[ -x "$BIN" ] || (cd "$ROOT" && cargo build -q --locked -p oxprof)
SCRATCH="$(mktemp -d /tmp/oxprof-perfetto-check.XXXXXX)"
trap 'rm -rf "$SCRATCH"' EXIT
for run in megascale megascale-perfetto; do
  for f in "$ROOT/testdata/tpu-synthetic/$run/plugins/profile/run/"*.xplane.pb.gz; do
    host="$(basename "$f" .xplane.pb.gz)"
    "$BIN" data megascale_stats "$ROOT/testdata/tpu-synthetic/$run" --host "$host" --param perfetto=true \
      > "$SCRATCH/$run-$host.gz"
  done
done
"$VENV/bin/python" - "$SCRATCH" <<'PY'
import glob, gzip, os, sys
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
for path in sorted(glob.glob(os.path.join(sys.argv[1], '*.gz'))):
  raw = gzip.decompress(open(path, 'rb').read())
  trace = pb.Trace()
  trace.ParseFromString(raw)
  kinds = sorted({p.WhichOneof('data') or '-' for p in trace.packet})
  assert trace.packet and kinds == ['track_descriptor', 'track_event'], (path, kinds)
  assert trace.SerializeToString() == raw, f'{path}: not canonical under Perfetto schema'
  print(f'{os.path.basename(path)}: {len(trace.packet)} packets read with Perfetto schema')
PY
