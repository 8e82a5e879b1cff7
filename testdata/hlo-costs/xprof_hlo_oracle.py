"""XProf 2.24.2 as an oracle for oxprof's HLO module map and GPU cost analysis.

Builds a GPU XSpace with one kernel per HLO instruction (each in its own step group, 1 us
long) whose `/host:metadata` plane holds either the HLO modules of a real profile or HLO text
modules, runs XProf's own converter on it (`raw_to_tool_data`, the refkit's venv:
`$VENV/bin/python`), and writes per-instruction records of what XProf computed
(`<out>.json.gz`: FLOPs, bytes, memory breakdown, category, provenance, HLO text, source).

  xprof_hlo_oracle.py profile REAL.xplane.pb OUT.json.gz
  xprof_hlo_oracle.py text OUT.json.gz [--xspace OUT.xplane.pb] A.hlo [B.hlo ...]
"""
import glob, gzip, json, os, shutil, sys, tempfile
os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'
from tensorflow.tsl.profiler.protobuf import xplane_pb2
from tensorflow.compiler.xla.service import hlo_pb2
from google.protobuf import json_format
from xprof.convert import raw_to_tool_data as r2t
from xprof.protobuf import op_stats_pb2


def modules_from_profile(path):
    real = xplane_pb2.XSpace(); real.ParseFromString(open(path, 'rb').read())
    meta = [p for p in real.planes if p.name == '/host:metadata'][0]
    names = {k: v.name for k, v in meta.stat_metadata.items()}
    out = []
    for pid, md in sorted(meta.event_metadata.items()):
        proto, program = None, pid
        for s in md.stats:
            if names.get(s.metadata_id) == 'Hlo Proto': proto = s.bytes_value
            if names.get(s.metadata_id) == 'program_id': program = s.int64_value or s.uint64_value
        if proto is not None:
            out.append((program, proto))
    return out


def modules_from_text(files):
    from jax._src.lib import xla_client as xc
    out = []
    for pid, f in enumerate(files, 1):
        module = xc.hlo.hlo_module_from_text(open(f).read())
        hp = hlo_pb2.HloProto()
        hp.hlo_module.CopyFrom(hlo_pb2.HloModuleProto.FromString(module.as_serialized_hlo_module_proto()))
        out.append((pid, hp.SerializeToString()))
    return out


def synthetic_xspace(modules):
    xs = xplane_pb2.XSpace()
    meta = xs.planes.add(); meta.id = 1; meta.name = '/host:metadata'
    meta.stat_metadata[1].id = 1; meta.stat_metadata[1].name = 'Hlo Proto'
    meta.stat_metadata[2].id = 2; meta.stat_metadata[2].name = 'program_id'
    gpu = xs.planes.add(); gpu.id = 2; gpu.name = '/device:GPU:0'
    for i, n in enumerate(['hlo_op', 'program_id', 'kernel_details', 'group_id'], 1):
        gpu.stat_metadata[i].id = i; gpu.stat_metadata[i].name = n
    line = gpu.lines.add(); line.id = 1; line.name = 'Stream #1(Kernel)'; line.timestamp_ns = 1000
    t, kernel = 0, 1
    for n, (program, proto) in enumerate(modules, 1):
        md = meta.event_metadata[n]; md.id = n; md.name = f'module({program})'
        s = md.stats.add(); s.metadata_id = 1; s.bytes_value = proto
        s = md.stats.add(); s.metadata_id = 2; s.int64_value = program
        hp = hlo_pb2.HloProto(); hp.ParseFromString(proto)
        for c in hp.hlo_module.computations:
            for ins in c.instructions:
                gpu.event_metadata[kernel].id = kernel; gpu.event_metadata[kernel].name = ins.name + '.kd'
                e = line.events.add(); e.metadata_id = kernel; e.offset_ps = t; e.duration_ps = 1000
                for sid, field, value in [(1, 'str_value', ins.name), (2, 'int64_value', program),
                                          (3, 'str_value', 'grid:1,1,1 block:64,1,1'), (4, 'int64_value', kernel)]:
                    s = e.stats.add(); s.metadata_id = sid; setattr(s, field, value)
                t += 2000; kernel += 1
    return xs


def records(op_stats):
    out = []
    for m in op_stats.device_op_metrics_db.metrics_db:
        if m.name == 'IDLE':
            continue
        out.append({
            'program_id': m.hlo_module_id, 'name': m.name, 'flops': m.flops, 'model_flops': m.model_flops,
            'bytes_accessed': m.bytes_accessed,
            'memory_accessed_breakdown': [[x.operation_type == 1, x.bytes_accessed] for x in m.memory_accessed_breakdown],
            'category': m.category, 'provenance': m.provenance, 'long_name': m.long_name,
            'deduplicated_name': m.deduplicated_name,
            'source': [m.source_info.file_name, m.source_info.line_number, m.source_info.stack_frame],
        })
    return sorted(out, key=lambda r: (r['program_id'], r['name']))


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    xspace_out = None
    if mode == 'profile':
        modules, out = modules_from_profile(args[0]), args[1]
    else:
        out, rest = args[0], args[1:]
        if rest[0] == '--xspace':
            xspace_out, rest = rest[1], rest[2:]
        modules = modules_from_text(rest)
    xs = synthetic_xspace(modules)
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, 'h.xplane.pb')
    open(path, 'wb').write(xs.SerializeToString())
    if xspace_out:
        shutil.copy(path, xspace_out)
    r2t.xspace_to_tool_data([path], 'overview_page', {'use_saved_result': True, 'hosts': ['h'], 'host': 'h'})
    m = op_stats_pb2.OpStats(); m.ParseFromString(open(glob.glob(os.path.join(tmp, '*op_stats*'))[0], 'rb').read())
    recs = records(m)
    with gzip.GzipFile(out, 'wb', mtime=0) as f:
        f.write(json.dumps(recs, separators=(',', ':')).encode())
    print(len(recs), 'records')
    shutil.rmtree(tmp)


if __name__ == '__main__':
    main()
