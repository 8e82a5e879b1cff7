"""Loads one PyTorch trace with torch-tb-profiler 0.4.3's loader, in this process, for
scripts/bench/kineto-loaders.sh: `RunProfileData.parse` (read, json.loads, build its event
trees and statistics), what its RunLoader runs per worker file before the UI can show it."""
import os
import sys
import tempfile

from torch_tb_profiler.profiler.data import RunProfileData

path = sys.argv[1]
name = os.path.basename(path)
worker = name.split(".")[0]
with tempfile.TemporaryDirectory() as cache:
    profile = RunProfileData.parse(worker, None, path, cache)
print("tb-profiler events:", len(profile.events))
