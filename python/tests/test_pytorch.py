"""PyTorch profiler traces (Kineto JSON) from Python: the PyTorch and HTA tools' tables
equal `oxprof data` of the same wheel, with the documented dtypes."""

from __future__ import annotations

import pandas as pd
import pytest

import oxprof
from conftest import REPO, cli_json, documented_columns, run_cli
from test_tables import assert_first_table_equals_csv_of

# A two-rank DDP run on A100s (GPU kernels, NCCL), and a CPU-only training run.
DDP = REPO / "testdata" / "demo" / "pytorch_a100_ddp"
TRAIN = REPO / "testdata" / "kineto" / "train"

# pytorch_op_stats' first table (torch-tb-profiler's operator view), as python/README.md shows it.
OPERATOR_TABLE = "For a PyTorch trace, `pytorch_op_stats`"


@pytest.mark.parametrize("path", [DDP, TRAIN], ids=["ddp", "train"])
@pytest.mark.parametrize("tool", ["pytorch_overview", "pytorch_op_stats", "pytorch_kernel_stats", "hta_gpu_idle"])
def test_tables_equal_the_cli(oxprof_bin, path, tool):
    report = oxprof.open(path).tool(tool)
    assert report.json == cli_json(oxprof_bin, "data", tool, path, "--format", "report")
    markdown = run_cli(oxprof_bin, "data", tool, path, "--format", "md").stdout
    notes = "".join(f"> **Note:** {note}\n\n" for note in report.notes)
    assert markdown == notes + (report.markdown or "")
    if report.tables:
        assert_first_table_equals_csv_of(oxprof_bin, path, tool, next(iter(report.tables.values())))


def test_operator_columns_are_as_documented():
    operators = next(iter(oxprof.open(DDP).tool("pytorch_op_stats").tables.values()))
    dtypes = {c: ("str" if pd.api.types.is_string_dtype(d) else str(d)) for c, d in operators.dtypes.items()}
    documented = documented_columns(OPERATOR_TABLE)
    assert documented and dtypes == documented
    assert operators["calls"].sum() > 0 and operators["device_self_us"].sum() > 0
    assert "aten::addmm" in set(operators["name"]) or len(operators) > 10


def test_a_trace_file_opens_as_its_own_run():
    (trace,) = DDP.glob("*.pt.trace.json.gz")
    profile = oxprof.open(trace)
    (run,) = profile.runs
    assert len(profile.hosts[run]) == 1
    kernels = next(iter(profile.tool("pytorch_kernel_stats").tables.values()))
    assert len(kernels) > 0 and kernels.iloc[:, 0].str.startswith("ncclKernel").any()
