"""Records Holistic Trace Analysis' (HTA, PyPI `traceinsight` 0.6.1) numbers for oxprof's
`hta_distributed` and `hta_gpu_idle` golden tests: `scripts/ref-hta.sh` runs it in the venv
it builds. One JSON file per run under the output directory (`<run>.json`).

Each run is a list of (rank, trace file). HTA is called the way its docs show
(`TraceAnalysis(trace_files={rank: path})`, default arguments, no plots); outputs are
written as lists of records. Missing external files skip the run.

`idle_time_breakdown` is recorded twice: as HTA 0.6.1 computes it (`idle_hta`) and with
one fix (`idle`). HTA's `_filter_irrelevant_gpu_kernels` (run when a trace has two or more
`ProfilerStep#N`) rebuilds each rank's frame with `ignore_index=True`, but
`get_idle_time_breakdown` then looks the launching runtime event up by *label*
(`join(..., on="index_correlation")`), whose values are the original event indices: it
reads another event's start, so "host wait" is decided against an unrelated timestamp.
The fixed run relabels the filtered frame by its `index` column before the join, which
is what HTA does for unfiltered traces; oxprof's golden tests use the fixed numbers.
"""

import json
import math
import os
import sys
import warnings

warnings.filterwarnings("ignore")
import logging  # noqa: E402

logging.disable(logging.WARNING)

import pandas as pd  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402

HTA = "/work/shared/testdata/external/facebookresearch-HolisticTraceAnalysis/tests/data"
TL = "/work/shared/testdata/external/AMD-AGI-TraceLens/tests/traces"


def runs(repo):
    """name -> [(rank, path)]"""
    out = {
        "hta_trace_filter_2ranks": [
            (0, f"{HTA}/trace_filter/sampled_rank-0.json.gz"),
            (1, f"{HTA}/trace_filter/sampled_rank-1.json.gz"),
        ],
        "hta_cupti_profiler": [(0, f"{HTA}/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz")],
        "hta_ns_resolution": [(0, f"{HTA}/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")],
        "hta_amd_trace": [(0, f"{HTA}/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz")],
        "hta_gpu_user_annotation": [(0, f"{HTA}/with_gpu_user_annotation/step_based_trace_2543932.json.gz")],
        "tracelens_b200_eager": [(0, f"{TL}/b200/eager_trace.json.gz")],
        "tracelens_h100_qwen": [(0, f"{TL}/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")],
        "tracelens_h100_bert": [(0, f"{TL}/h100/gaunernst_bert-small-uncased__1016001.json.gz")],
        "tracelens_mi300_bert": [(0, f"{TL}/mi300/gaunernst_bert-small-uncased__1016001.json.gz")],
        "tracelens_torch_compile_triton": [(0, f"{TL}/torch_compile_triton/trace.json.gz")],
    }
    alexnet = f"{HTA}/critical_path/alexnet"
    if os.path.isdir(alexnet):
        files = sorted(f for f in os.listdir(alexnet) if f.endswith((".json", ".json.gz")) and "trace" in f)
        if files:
            out["hta_critical_path_alexnet"] = [(0, f"{alexnet}/{files[0]}")]
    for run in ("ddp", "train"):
        d = f"{repo}/testdata/kineto/{run}"
        if os.path.isdir(d):
            files = sorted(f for f in os.listdir(d) if f.endswith(".json.gz"))
            out[f"kineto_{run}"] = list(enumerate(f"{d}/{f}" for f in files))
    return out


def records(df):
    if df is None:
        return None
    df = df.reset_index() if not isinstance(df.index, pd.RangeIndex) else df
    rows = []
    for rec in df.to_dict(orient="records"):
        row = {}
        for k, v in rec.items():
            key = "_".join(str(p) for p in k if p != "") if isinstance(k, tuple) else str(k)
            if hasattr(v, "item"):
                v = v.item()
            if isinstance(v, float) and not math.isfinite(v):
                v = None
            row[key] = v
        rows.append(row)
    return rows


def attempt(fn):
    try:
        return {"ok": fn()}
    except Exception as e:  # HTA's own failures are part of what it says
        return {"error": f"{type(e).__name__}: {e}"}


def idle(analysis, ranks, fixed):
    from hta.analyzers import breakdown_analysis

    t = analysis.t
    saved = {r: t.traces[r] for r in ranks}
    try:
        if fixed:
            for r in ranks:
                df = t.traces[r]
                t.traces[r] = df.set_index(df["index"].values)
        out = []
        for r in ranks:
            df, _ = breakdown_analysis.BreakdownAnalysis.get_idle_time_breakdown(
                t, consecutive_kernel_delay=30, rank=r, visualize=False
            )
            out.extend(records(df))
        return out
    finally:
        t.traces.update(saved)


def launch(analysis, ranks):
    out = {}
    stats = analysis.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
    for r, df in stats.items():
        df = df.sort_values(["correlation", "cpu_duration", "gpu_duration"]).reset_index(drop=True)
        out[str(r)] = records(df)
    return out


def one(name, files):
    ranks = [r for r, _ in files]
    analysis = TraceAnalysis(trace_files={r: p for r, p in files}, trace_dir="/")
    return {
        "files": [os.path.relpath(p, "/work") if p.startswith("/work/shared") else p.split("/testdata/", 1)[-1] for _, p in files],
        "temporal": attempt(lambda: records(analysis.get_temporal_breakdown(visualize=False))),
        "overlap": attempt(lambda: records(analysis.get_comm_comp_overlap(visualize=False))),
        "idle": attempt(lambda: idle(analysis, ranks, True)),
        "idle_hta": attempt(lambda: idle(analysis, ranks, False)),
        "launch": attempt(lambda: launch(analysis, ranks)),
        "queue": attempt(lambda: records(analysis.get_queue_length_summary(ranks=ranks))),
    }


def main():
    repo, out_dir = sys.argv[1], sys.argv[2]
    only = set(sys.argv[3:])
    os.makedirs(out_dir, exist_ok=True)
    for name, files in runs(repo).items():
        if only and name not in only:
            continue
        if not all(os.path.exists(p) for _, p in files):
            print(f"skip {name}: files absent")
            continue
        try:
            result = one(name, files)
        except Exception as e:
            result = {"files": [p for _, p in files], "error": f"{type(e).__name__}: {e}"}
        with open(f"{out_dir}/{name}.json", "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
        print(f"wrote {name}")


if __name__ == "__main__":
    main()
