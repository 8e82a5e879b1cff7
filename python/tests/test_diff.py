"""`oxprof.diff` and `Profile.diff`: the comparison `oxprof diff` prints, one DataFrame per
section, equal to the installed CLI's `--format json` on the committed pairs
(testdata/diff: slow_b32 input-bound, fast_b32 the fixed pipeline)."""

from __future__ import annotations

import math

import pytest

import oxprof
from conftest import REPO, cli_json, run_cli

PAIRS = REPO / "testdata" / "diff"
SLOW, FAST = PAIRS / "slow_b32", PAIRS / "fast_b32"


def test_sections_are_data_frames_with_the_cli_numbers(oxprof_bin):
    d = oxprof.diff(SLOW, FAST)
    cli = cli_json(oxprof_bin, "diff", SLOW, FAST, "--format", "json", "--no-cache")
    assert d.json == cli, "the same comparison as the CLI's"
    assert list(d.tables) == ["steps", "framework_ops", "memory"]

    steps = d.steps
    step_time = steps.set_index("metric").loc["step_time"]
    expected = cli["steps"]["metrics"][0]
    assert step_time["a"] == expected["change"]["a"] and step_time["b"] == expected["change"]["b"]
    assert step_time["relative"] < -0.5 and bool(step_time["beyond_noise"])
    assert step_time["p_value"] < 0.05 and step_time["n_a"] == 28
    assert steps["metric"].iloc[-1] == "input_share"
    assert str(steps["beyond_noise"].dtype) == "boolean"

    ops = d.framework_ops
    assert set(ops["list"]) <= {"both", "only_in_a", "only_in_b"}
    counts = cli["ops"][0]["counts"]
    assert (ops["list"] == "both").sum() == counts["matched"]
    assert (ops["list"] == "only_in_a").sum() == counts["only_in_a"]
    assert "EagerPyFunc" in set(ops.loc[ops["list"] == "only_in_a", "name"])
    assert ops.attrs["kind"] == "framework_op" and ops.attrs["basis"]["kind"] == "per_step"
    for column in ("self_time_us_a", "self_time_us_delta", "count_b", "mean_us_relative"):
        assert str(ops[column].dtype) == "float64", column

    memory = d.memory
    assert list(memory["allocator"]) == ["bfc_cpu_allocator_for_gpu"]
    assert memory["peak_bytes_a"].iloc[0] > 0
    assert d.kernels.empty and d.hlo_ops.empty, "CPU runs: no kernels, no HLO ops"
    assert "# oxprof diff" in d.markdown and d._repr_markdown_() == d.markdown


def test_profile_diff_and_gates(oxprof_bin):
    profile = oxprof.open(SLOW)
    d = profile.diff(oxprof.open(FAST), fail_if=["step_time<-10%", "step_time>+5%"])
    assert d.json["a"]["source"]["path"] == str(SLOW)
    assert d.tripped
    gates = d.tables["gates"]
    assert list(gates["status"]) == ["tripped", "passed"]
    done = run_cli(oxprof_bin, "diff", SLOW, FAST, "--fail-if", "step_time<-10%", "--no-cache", check=False)
    assert done.returncode == 1, "the CLI exits 1 on the same gate"


def test_a_run_against_itself_changes_nothing():
    d = oxprof.diff(FAST, FAST)
    assert not d.steps["beyond_noise"].any()
    assert (d.framework_ops["self_time_us_delta"] == 0).all()
    assert not d.tripped and math.isclose(d.steps["relative"].iloc[0], 0.0)


def test_errors_are_oxprof_errors():
    with pytest.raises(oxprof.BadParameter, match="fail_if"):
        oxprof.diff(SLOW, FAST, fail_if=["nonsense"])
    with pytest.raises(oxprof.ProfileNotFound):
        oxprof.diff(SLOW, PAIRS / "no_such_run")


def test_pytorch_ranks_compare_operators_with_device_times():
    """The committed DDP traces (rank 0 vs rank 1): torch-tb-profiler's steps and
    operators, with device-time columns for the operators."""
    ddp = REPO / "testdata" / "kineto" / "ddp"
    rank0, rank1 = (next(ddp.glob(f"{rank}.*.pt.trace.json.gz")) for rank in ("rank0", "rank1"))
    d = oxprof.diff(rank0, rank1)
    assert d.json["steps"]["source"] == "pytorch" and d.json["steps"]["steps_a"] == 2
    ops = d.framework_ops
    assert ops.attrs["tool"] == "pytorch_op_stats"
    assert "aten::addmm" in set(ops["name"])
    assert "device_self_time_us_a" in ops.columns
