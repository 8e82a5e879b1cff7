"""Benchmark (not a test): loading a PyTorch (Kineto) trace into pandas DataFrames from
Python, oxprof against Holistic Trace Analysis' loader (PyPI traceinsight 0.6.1), on the
same trace files. Each measurement is a fresh process; the ways are interleaved, run
after run. scripts/bench/python-hta.sh runs it with the two venvs.

    python bench_hta.py --oxprof-python PY --hta-python PY [--runs N] TRACE...

The ways, each timed inside its process from before importing the library (pandas is
already imported, as in a notebook) until the DataFrames exist:
  oxprof ops+kernels  oxprof.open(TRACE) and the tables of pytorch_op_stats and
                      pytorch_kernel_stats (operators, kernels: torch-tb-profiler's views)
  oxprof events       oxprof.open(TRACE).query("SELECT * FROM slice"): every event, one row
                      each (the `oxprof` command decodes it and streams Parquet to pyarrow)
  HTA                 TraceAnalysis(trace_dir=DIR).t.get_trace(0): HTA's DataFrame of every
                      event of the rank (DIR holds only TRACE)
Printed per trace and way: best and median of that time, of the whole process's wall time
(interpreter start and imports included), and of its peak RSS (the largest of the process
and the processes it started, as wait4 reports; for `oxprof events` that is the larger of
Python and the `oxprof` command).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

OXPROF_OPS = """
import sys, time, pandas, pyarrow
t = time.perf_counter()
import oxprof
profile = oxprof.open(sys.argv[1], persistent_cache=False)
operators = profile.tool("pytorch_op_stats").tables
kernels = profile.tool("pytorch_kernel_stats").tables
print(time.perf_counter() - t, sum(len(frame) for frame in [*operators.values(), *kernels.values()]))
"""

OXPROF_EVENTS = """
import sys, time, pandas, pyarrow
t = time.perf_counter()
import oxprof
events = oxprof.open(sys.argv[1], persistent_cache=False).query("SELECT * FROM slice")
print(time.perf_counter() - t, len(events))
"""

HTA = """
import logging, sys, time, warnings, pandas
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
t = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
events = TraceAnalysis(trace_dir=sys.argv[2]).t.get_trace(0)
print(time.perf_counter() - t, len(events))
"""


def measure(python: str, snippet: str, trace: str, trace_dir: str) -> tuple[float, float, float, int]:
    """(seconds inside, process wall seconds, peak RSS in MB, rows) of one fresh process,
    reaped with wait4 to read its peak RSS (subprocess reaps without telling it)."""
    start = time.perf_counter()
    read_end, write_end = os.pipe()
    with tempfile.TemporaryFile() as err_file:
        pid = os.fork()
        if pid == 0:  # the child: stdout to the pipe, then the measured interpreter
            os.close(read_end)
            os.dup2(write_end, 1)
            os.dup2(err_file.fileno(), 2)
            try:
                os.execv(python, [python, "-c", snippet, trace, trace_dir])
            finally:
                os._exit(127)
        os.close(write_end)
        with os.fdopen(read_end) as pipe:
            out = pipe.read()
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err_file.seek(0)
            raise SystemExit(f"{python} failed on {trace}:\n{err_file.read().decode(errors='replace')}")
    inner, rows = out.split()[-2:]
    return float(inner), wall, usage.ru_maxrss / 1024, int(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oxprof-python", required=True, help="a python with the oxprof wheel, pandas and pyarrow")
    parser.add_argument("--hta-python", required=True, help="a python with traceinsight 0.6.1 (hta)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each way per trace (default 3)")
    parser.add_argument("traces", nargs="+")
    args = parser.parse_args()
    ways = {
        "oxprof ops+kernels": (args.oxprof_python, OXPROF_OPS),
        "oxprof events": (args.oxprof_python, OXPROF_EVENTS),
        "HTA": (args.hta_python, HTA),
    }
    print("| trace | way | rows | load → DataFrames: best / median (s) | whole process: best / median (s) | peak RSS: best / median (MB) |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for trace in args.traces:
        trace = str(Path(trace).resolve())
        size = f"{os.path.getsize(trace) / 1e6:.0f} MB"
        if trace.endswith(".gz"):
            with open(trace, "rb") as f:  # gzip's trailer: the inflated size (mod 4 GiB)
                f.seek(-4, os.SEEK_END)
                size += f", {int.from_bytes(f.read(4), 'little') / 1e6:.0f} MB of JSON"
        with tempfile.TemporaryDirectory(prefix="oxprof-bench-hta-") as trace_dir:
            # HTA reads every trace file of a directory: this one holds only TRACE.
            os.symlink(trace, os.path.join(trace_dir, os.path.basename(trace)))
            results: dict[str, list[tuple[float, float, float, int]]] = {way: [] for way in ways}
            for _ in range(args.runs):
                for way, (python, snippet) in ways.items():
                    results[way].append(measure(python, snippet, trace, trace_dir))
        for way, got in results.items():
            inner, wall, rss = ([r[i] for r in got] for i in range(3))
            print(
                f"| {os.path.basename(trace)} ({size}) | {way} | {got[-1][3]:,} "
                f"| {min(inner):.2f} / {statistics.median(inner):.2f} "
                f"| {min(wall):.2f} / {statistics.median(wall):.2f} "
                f"| {min(rss):.0f} / {statistics.median(rss):.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
