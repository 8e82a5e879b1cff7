"""torch-tb-profiler 0.4.3's own numbers for oxprof's PyTorch analyses (run by
scripts/ref/torch-tb.sh): for each trace, RunProfileData.parse (its event parser, operator
tree, overall, GPU-metrics, tensor-core and kernel parsers) and a JSON of what its overview,
operator and kernel views show, times in microseconds as it computes them; with `[memory]`
events also its memory view (curves, peaks, allocation events, memory by operator); with
module events (`python_function` with `Python module id`) also its module view.

One deliberate change, `--fix-runtime-category` (on by default, recorded in each file):
0.4.3 maps only the category `runtime` to CUDA runtime events, but Kineto has written
`cuda_runtime` / `cuda_driver` since 2022, so on every modern trace 0.4.3 sees no runtime
at all (kernels are not tied to operators, Runtime is 0 in the breakdown). The golden files
record torch-tb-profiler's algorithms with those two categories mapped to Runtime too.
"""

import argparse
import json
import logging
import math
import os
import sys
import tempfile

from torch_tb_profiler.profiler import trace as tb_trace
from torch_tb_profiler.profiler.data import RunProfileData
from torch_tb_profiler.profiler.event_parser import ProfileRole
from torch_tb_profiler.profiler.module_op import aggegate_module_view
import torch_tb_profiler.run as tb_run  # after .profiler: the package imports it circularly

ROLES = ["Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec", "Other", "Total"]


def num(x):
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def op_row(agg, with_shape=False, with_stack=False):
    row = {
        "name": agg.name,
        "calls": agg.calls,
        "host_total_us": num(agg.host_duration),
        "host_self_us": num(agg.self_host_duration),
        "device_total_us": num(agg.device_duration),
        "device_self_us": num(agg.self_device_duration),
        "tc_eligible": bool(agg.tc_eligible),
        "tc_self_us": num(agg.tc_self_duration),
        "tc_total_us": num(agg.tc_total_duration),
    }
    if with_shape:
        row["input_shape"] = agg.input_shape
    if with_stack:
        row["call_stack"] = next(iter(agg.callstacks))
    return row


class _Exact:
    """torch-tb-profiler's views round to 2 digits for display: the goldens keep full precision."""

    def __init__(self, ndigits):
        pass

    def __call__(self, x):
        return x


def memory(p):
    """The memory view (RunProfile.get_memory_curve / get_memory_events / get_memory_stats) in
    bytes and microseconds since the profiler's first event, unrounded and not downsampled."""
    if not p.memory_snapshot:
        return None
    run = tb_run.RunProfile("w", "1")
    run.memory_snapshot = p.memory_snapshot
    run.tid2tree = p.tid2tree
    run.profiler_start_ts = p.profiler_start_ts
    run.gpu_infos = {}
    tb_run.DisplayRounder = _Exact
    tb_run.lttb_sample = lambda curves: curves
    curve = run.get_memory_curve("us", "B", patch_for_step_plot=False)
    events = run.get_memory_events(time_metric="us", memory_metric="B")
    stats = run.get_memory_stats(memory_metric="B")
    peaks = {}
    for (dtype, did), v in p.memory_snapshot.get_peak_memory().items():
        name = "CPU" if dtype == 0 else f"GPU{did}" if dtype == 1 else None
        if name is not None:
            peaks[name] = num(v)
    return {
        "profiler_start_us": num(p.profiler_start_ts),
        "peaks_bytes": peaks,
        # [time µs, allocated B, reserved B] per device, one point per record
        "curves": {d: [[num(x) for x in pt] for pt in pts] for d, pts in sorted(curve["rows"].items())},
        # [operator, size B, allocation µs, release µs, duration µs] per device, in its order
        "events": {d: [[r[0]] + [num(x) for x in r[1:]] for r in rows] for d, rows in sorted(events["rows"].items())},
        # [operator, calls, size increase, self size increase, allocations, self allocations,
        #  allocation size, self allocation size] per device, by operator name
        "stats": {d: [[r[0]] + [num(x) for x in r[1:]] for r in rows] for d, rows in sorted(stats["rows"].items())},
        "records": len(p.memory_snapshot.memory_records),
    }


def module_tree(stats):
    """The module view (module_op.aggegate_module_view, what RunProfile.get_module_view
    shows) as nested rows. Roots come from a set: equal names are put in a fixed order."""
    def row(m):
        return {
            "name": m.name, "module_id": m.id, "occurrences": m.occurences, "operators": m.operators,
            "host_total_us": num(m.host_duration), "host_self_us": num(m.self_host_duration),
            "device_total_us": num(m.device_duration), "device_self_us": num(m.self_device_duration),
            "mean_us": num(m.avg_duration), "children": [row(c) for c in m.children],
        }
    rows = [row(m) for m in stats]
    rows.sort(key=lambda r: (r["name"], r["module_id"], json.dumps(r, sort_keys=True)))
    return rows


def golden(path, rel):
    worker = os.path.basename(path).split(".")[0]
    with tempfile.TemporaryDirectory() as cache:
        p = RunProfileData.parse(worker, "1", path, cache)
    steps = [{"name": n, "costs_us": dict(zip(ROLES, map(num, c.costs)))} for n, c in zip(p.steps_names, p.steps_costs)]
    gm = p.gpu_metrics_parser
    gpus = []
    for g in sorted(gm.gpu_ids):
        gpus.append({
            "id": g,
            "utilization": num(gm.gpu_utilization[g]),
            "sm_efficiency": num(gm.avg_approximated_sm_efficiency_per_device[g]),
            "achieved_occupancy_pct": num(gm.avg_occupancy_per_device[g]),
            "tensor_core_ratio": num(p.tc_ratio[g]) if p.tc_ratio else None,
        })
    out = {
        "trace": rel,
        "reference": "torch-tb-profiler 0.4.3 RunProfileData",
        "runtime_categories": ["runtime", "cuda_runtime", "cuda_driver"],
        "overview": {
            "steps": steps,
            "average_us": dict(zip(ROLES, map(num, p.avg_costs.costs))),
            "gpus": gpus,
            "tc_eligible_ops_kernel_ratio": num(p.tc_eligible_ops_kernel_ratio),
            "tc_used_ratio": num(p.tc_used_ratio),
            "recommendations": p.recommendations,
        },
        "operators": {
            "by_name": sorted((op_row(a) for a in p.op_list_groupby_name), key=lambda r: r["name"]),
            "by_name_input": sorted((op_row(a, True) for a in p.op_list_groupby_name_input),
                                    key=lambda r: (r["name"], r["input_shape"])),
            "by_name_stack": sorted((op_row(a, False, True) for aggs in p.stack_lists_group_by_name.values() for a in aggs),
                                    key=lambda r: (r["name"], r["call_stack"])),
        },
        "kernels": {"by_name_op": [], "by_name": []},
    }
    try:
        mem = memory(p)
    except Exception as e:  # noqa: BLE001 - the memory view fails alone in TensorBoard too
        mem = {"reference_error": f"{type(e).__name__}: {e}"}
    if mem is not None:
        out["memory"] = mem
    if any(e.type == tb_trace.EventTypes.MODULE for e in p.events):
        try:
            stats = aggegate_module_view(p.tid2tree, p.events)
            out["modules"] = module_tree(stats or [])
        except Exception as e:  # noqa: BLE001 - the module view fails alone in TensorBoard too
            out["modules"] = {"reference_error": f"{type(e).__name__}: {e}"}
    for k in p.kernel_list_groupby_name_op or []:
        out["kernels"]["by_name_op"].append({
            "name": k.name, "operator": k.op_name, "grid": str(k.grid), "block": str(k.block),
            "registers_per_thread": k.regs_per_thread or 0, "shared_memory": k.shared_memory or 0,
            "calls": k.calls, "total_us": num(k.total_duration), "mean_us": num(k.avg_duration),
            "max_us": num(k.max_duration), "min_us": num(k.min_duration),
            "mean_blocks_per_sm": num(k.avg_blocks_per_sm), "mean_occupancy_pct": num(k.avg_occupancy),
            "tensor_cores_used": bool(k.tc_used), "op_tc_eligible": bool(k.op_tc_eligible),
        })
    out["kernels"]["by_name_op"].sort(key=lambda r: (r["name"], r["operator"], r["grid"], r["block"],
                                                     str(r["registers_per_thread"]), str(r["shared_memory"])))
    if p.kernel_stat is not None:
        for name, r in p.kernel_stat.iterrows():
            out["kernels"]["by_name"].append({
                "name": name, "tensor_cores_used": bool(r["tc_used"]), "calls": int(r["count"]),
                "total_us": num(r["sum"]), "mean_us": num(r["mean"]), "max_us": num(r["max"]),
                "min_us": num(r["min"]), "mean_blocks_per_sm": num(r["blocks_per_sm"]),
                "mean_occupancy_pct": num(r["occupancy"]),
            })
        out["kernels"]["by_name"].sort(key=lambda r: r["name"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--external", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-fix-runtime-category", action="store_true")
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    logging.disable(logging.WARNING)
    if not a.no_fix_runtime_category:
        tb_trace.EventTypeMap["cuda_runtime"] = tb_trace.EventTypes.RUNTIME
        tb_trace.EventTypeMap["cuda_driver"] = tb_trace.EventTypes.RUNTIME
    ext = os.path.realpath(a.external)
    for t in a.traces:
        real = os.path.realpath(t)
        if real.startswith(ext + os.sep):
            rel = "external/" + os.path.relpath(real, ext)
        else:
            rel = os.path.relpath(real, os.path.realpath(a.root))
        name = rel.replace("external/", "").replace("testdata/", "").replace("/", "__")
        for suffix in (".json.gz", ".json"):
            name = name.removesuffix(suffix)
        try:
            g = golden(t, rel)
        except Exception as e:  # noqa: BLE001 - record what the reference cannot read
            print(f"{rel}: torch-tb-profiler failed: {type(e).__name__}: {e}", file=sys.stderr)
            g = {"trace": rel, "reference_error": f"{type(e).__name__}: {e}"}
        with open(os.path.join(a.out, name + ".json"), "w") as f:
            json.dump(g, f, indent=1, sort_keys=False)
            f.write("\n")
        print(f"{rel}: ok" if "reference_error" not in g else f"{rel}: error", file=sys.stderr)


if __name__ == "__main__":
    main()
