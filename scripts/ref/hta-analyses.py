"""Records Holistic Trace Analysis' (HTA, PyPI `traceinsight` 0.6.1) numbers for oxprof's
`hta_distributed` and `hta_gpu_idle` golden tests: `scripts/ref/hta.sh` runs it in the venv
it builds. One JSON file per run under the output directory (`<run>.json`).

Each run is a list of (rank, trace file). HTA is called the way its docs show
(`TraceAnalysis(trace_files={rank: path})`, default arguments, no plots); outputs are
written as lists of records. Missing external files skip the run.

Files are named `external:<path under ../shared/testdata/external>` or `repo:<path in the
repo>`; ranks are the files' positions. HTA's failures are recorded (`{"error": ...}`) as
what it says on that trace.
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

EXTERNAL = os.environ.get("OXPROF_EXTERNAL_TESTDATA", "/work/shared/testdata/external")
HTA = f"{EXTERNAL}/facebookresearch-HolisticTraceAnalysis/tests/data"
TL = f"{EXTERNAL}/AMD-AGI-TraceLens/tests/traces"


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


def idle(analysis, ranks):
    out = []
    for r in ranks:
        df, _ = analysis.get_idle_time_breakdown(ranks=[r], visualize=False)
        out.extend(records(df))
    return out


def launch(analysis, ranks):
    out = {}
    stats = analysis.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
    for r, df in stats.items():
        df = df.sort_values(["correlation", "cpu_duration", "gpu_duration"]).reset_index(drop=True)
        out[str(r)] = records(df)
    return out


def name_of(path, repo):
    if path.startswith(EXTERNAL + "/"):
        return "external:" + os.path.relpath(path, EXTERNAL)
    return "repo:" + os.path.relpath(path, repo)


def one(name, files, repo):
    ranks = [r for r, _ in files]
    analysis = TraceAnalysis(trace_files={r: p for r, p in files}, trace_dir="/")
    return {
        "files": [name_of(p, repo) for _, p in files],
        "temporal": attempt(lambda: records(analysis.get_temporal_breakdown(visualize=False))),
        "overlap": attempt(lambda: records(analysis.get_comm_comp_overlap(visualize=False))),
        "idle": attempt(lambda: idle(analysis, ranks)),
        "launch": attempt(lambda: launch(analysis, ranks)),
        "queue": attempt(lambda: records(analysis.get_queue_length_summary(ranks=ranks))),
    }


def main():
    repo, out_dir = os.path.abspath(sys.argv[1]), sys.argv[2]
    only = set(sys.argv[3:])
    os.makedirs(out_dir, exist_ok=True)
    for name, files in runs(repo).items():
        if only and name not in only:
            continue
        if not all(os.path.exists(p) for _, p in files):
            print(f"skip {name}: files absent")
            continue
        try:
            result = one(name, files, repo)
        except Exception as e:
            result = {"files": [name_of(p, repo) for _, p in files], "error": f"{type(e).__name__}: {e}"}
        with open(f"{out_dir}/{name}.json", "w") as f:
            json.dump(result, f, sort_keys=True, separators=(",", ":"))
            f.write("\n")
        print(f"wrote {name}")


if __name__ == "__main__":
    main()
