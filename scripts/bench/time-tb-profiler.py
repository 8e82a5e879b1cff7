"""Times torch-tb-profiler 0.4.3 on one PyTorch trace, in this process, stage by stage: what
its RunLoader does per worker file before its UI shows the overview, operator, kernel,
memory and module views (read + json.loads, `process` — event trees, steps, operator and
kernel aggregation, memory snapshot —, `analyze` — recommendations —, and
`RunGenerator.generate_run_profile`, which renders every view). Printed beside oxprof's
times by scripts/bench/pytorch-analyses.sh.

    python scripts/bench/time-tb-profiler.py TRACE
"""
import logging
import os
import sys
import tempfile
import time
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

from torch_tb_profiler.profiler.data import RunProfileData  # noqa: E402
from torch_tb_profiler.profiler.run_generator import RunGenerator  # noqa: E402

path = sys.argv[1]
worker = os.path.basename(path).split(".")[0]
with tempfile.TemporaryDirectory() as cache:
    t = time.perf_counter()
    trace_path, trace_json = RunProfileData._preprocess_file(path, cache)
    print(f"read + json.loads     {time.perf_counter() - t:8.3f} s", flush=True)
    t = time.perf_counter()
    profile = RunProfileData(worker, None, trace_json)
    profile.trace_file_path = trace_path
    profile.process()
    print(f"process               {time.perf_counter() - t:8.3f} s", flush=True)
    t = time.perf_counter()
    profile.analyze()
    print(f"analyze               {time.perf_counter() - t:8.3f} s", flush=True)
    t = time.perf_counter()
    RunGenerator(worker, None, profile).generate_run_profile()
    print(f"generate_run_profile  {time.perf_counter() - t:8.3f} s", flush=True)
