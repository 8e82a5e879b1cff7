"""Reads an XSpace that `oxprof convert --to xspace` wrote from a PyTorch trace with XProf's
own code, for scripts/ref/xprof-opens-pytorch.sh: the protobuf classes TensorFlow ships
(events per plane) and XProf 2.24.2's converters (trace_viewer, trace_viewer@,
kernel_stats, framework_op_stats, overview_page). Prints one JSON object.

    python scripts/ref/xprof-opens-pytorch.py FILE.xplane.pb REFKIT_DIR
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
path, refkit = sys.argv[1], sys.argv[2]
sys.path.insert(0, refkit)
import xprof_convert  # noqa: E402  (the refkit's parameters, as XProf's server builds them)

try:
    from tensorflow.tsl.profiler.protobuf import xplane_pb2
except ImportError:
    from tsl.profiler.protobuf import xplane_pb2  # type: ignore

space = xplane_pb2.XSpace()
with open(path, "rb") as f:
    space.ParseFromString(f.read())
out = {"planes": {p.name: sum(len(l.events) for l in p.lines) for p in space.planes}}

host = os.path.basename(path)[: -len(".xplane.pb")]
for tool in ["trace_viewer", "trace_viewer@", "kernel_stats", "framework_op_stats", "overview_page"]:
    params = next(iter(xprof_convert.variants_for(tool, host, [], {})))[1]
    data, _, _ = xprof_convert.convert_one([path], tool, params)
    if data is None:
        out[tool] = None
        continue
    doc = json.loads(data)
    if tool.startswith("trace_viewer"):
        events = [e for e in doc["traceEvents"] if e.get("ph") in ("X", "i")]
        out[tool] = {"events": len(events), "flows": sum(1 for e in doc["traceEvents"] if "bind_id" in e)}
    elif isinstance(doc, list):
        out[tool] = {"tables": len(doc), "rows": sum(len(t.get("rows", [])) for t in doc if isinstance(t, dict))}
    else:
        out[tool] = {"rows": len(doc.get("rows", []))}
print(json.dumps(out, sort_keys=True))
