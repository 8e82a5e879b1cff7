"""Times HTA 0.6.1's analyses (the ones oxprof's hta_* tools compute) on one trace, after
loading it: what scripts/bench/pytorch-analyses.sh prints beside oxprof's times."""

import logging
import sys
import time
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

from hta.trace_analysis import TraceAnalysis  # noqa: E402

path = sys.argv[1]
t = time.perf_counter()
a = TraceAnalysis(trace_files={0: path}, trace_dir="/")
print(f"load (parse)          {time.perf_counter() - t:8.3f} s")


def timed(name, f):
    t = time.perf_counter()
    try:
        f()
        note = ""
    except Exception as e:  # HTA's failures are part of the comparison
        note = f"  ({type(e).__name__})"
    print(f"{name:22}{time.perf_counter() - t:8.3f} s{note}")


timed("temporal_breakdown", lambda: a.get_temporal_breakdown(visualize=False))
timed("comm_comp_overlap", lambda: a.get_comm_comp_overlap(visualize=False))
timed("idle_time_breakdown", lambda: a.get_idle_time_breakdown(ranks=[0], visualize=False))
timed("launch_stats", lambda: a.get_cuda_kernel_launch_stats(ranks=[0], visualize=False))
timed("queue_length_summary", lambda: a.get_queue_length_summary(ranks=[0]))
