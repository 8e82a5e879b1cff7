#!/usr/bin/env python3
# Usage: $VENV/bin/python scripts/ref/xprof-op-stats.py RUN_DIR_OR_XPLANE OUT_DIR  (VENV: the refkit venv with xprof 2.24.2)
"""Runs XProf's converter with caching on a scratch copy and dumps the per-host and combined
OpStats it caches (<host>.op_stats_v2.pb, ALL_HOSTS.op_stats_v2.pb) as proto JSON."""
import glob, json, os, shutil, sys, tempfile
from google.protobuf import json_format
from xprof.convert import raw_to_tool_data as r2t
from xprof.protobuf import op_stats_pb2
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
tmp = tempfile.mkdtemp()
files = [src] if src.endswith('.xplane.pb') else sorted(glob.glob(os.path.join(src, '*.xplane.pb')) + glob.glob(os.path.join(src, '*.hlo_proto.pb')))
for f in files: shutil.copy(f, tmp)
paths = sorted(glob.glob(os.path.join(tmp, '*.xplane.pb')))
hosts = [os.path.basename(p)[:-len('.xplane.pb')] for p in paths]
params = {"use_saved_result": True, "hosts": hosts}
if len(hosts) > 1: params["host"] = "ALL_HOSTS"
else: params["host"] = hosts[0]
r2t.xspace_to_tool_data(paths, "overview_page", params)
for pb in sorted(glob.glob(os.path.join(tmp, '*op_stats*'))):
    m = op_stats_pb2.OpStats(); m.ParseFromString(open(pb, 'rb').read())
    js = json_format.MessageToJson(m, preserving_proto_field_name=True, always_print_fields_with_no_presence=True, sort_keys=True, indent=None)
    name = os.path.basename(pb).replace('.pb', '.json')
    open(os.path.join(out, name), 'w').write(js)
    print(name, len(js))
print(sorted(os.listdir(tmp)))
