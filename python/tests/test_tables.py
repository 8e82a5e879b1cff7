"""Reports from Python equal the `oxprof data` output of the same wheel on the repository's
fixtures: XProf's body (`--format json`), its first table as CSV (`--format csv`), the
typed report (`--format report`) and Markdown (`--format md`)."""

from __future__ import annotations

import csv
import io
import json
import math

import pandas as pd
import pytest

import oxprof
from conftest import FIXTURES, cli_json, fixture, run_cli

# The OpStats tools, whose tables are XProf's DataTables.
DATATABLE_TOOLS = ["overview_page", "input_pipeline_analyzer", "framework_op_stats"]


def same_value(frame_value, expected) -> bool:
    """A DataFrame cell against a value XProf's body or CSV holds."""
    if expected is None or expected == "":
        return pd.isna(frame_value) or frame_value == ""
    if pd.isna(frame_value):
        return False
    if isinstance(expected, bool) or isinstance(frame_value, bool):
        return str(frame_value) == str(expected)
    if isinstance(frame_value, str):
        return frame_value == str(expected)
    expected = float(expected)
    return math.isclose(float(frame_value), expected, rel_tol=1e-12, abs_tol=0.0) or (
        math.isnan(expected) and math.isnan(float(frame_value))
    )


def data_tables(body):
    """The DataTables of an XProf body (one table, or a list with some)."""
    if isinstance(body, dict) and "cols" in body:
        return [body]
    return [t for t in body if isinstance(t, dict) and "cols" in t] if isinstance(body, list) else []


@pytest.mark.parametrize("name", FIXTURES)
def test_overview_tables_equal_the_cli_body_and_csv(oxprof_bin, name):
    report = oxprof.open(fixture(name)).tool("overview_page")
    tables = list(report.tables.values())
    body = cli_json(oxprof_bin, "data", "overview_page", fixture(name), "--format", "json")
    assert json.loads(report.xprof_body) == body
    expected = data_tables(body)
    assert len(tables) == len(expected) > 0
    for frame, table in zip(tables, expected):
        assert list(frame.columns) == [c["id"] for c in table["cols"]]
        assert list(frame.attrs["labels"].values()) == [c["label"] for c in table["cols"]]
        assert frame.attrs["facts"] == {k: str(v) for k, v in sorted(table.get("p", {}).items())}
        assert len(frame) == len(table["rows"])
        for i, row in enumerate(table["rows"]):
            for j, cell in enumerate(row["c"]):
                value = cell.get("v") if cell else None
                assert same_value(frame.iat[i, j], value), (name, frame.attrs["name"], i, j, frame.iat[i, j], value)
    assert_first_table_equals_csv(oxprof_bin, name, "overview_page", tables[0])


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("tool", ["input_pipeline_analyzer", "framework_op_stats"])
def test_first_table_equals_the_cli_csv(oxprof_bin, name, tool):
    report = oxprof.open(fixture(name)).tool(tool)
    assert_first_table_equals_csv(oxprof_bin, name, tool, next(iter(report.tables.values())))


def assert_first_table_equals_csv(oxprof_bin, name, tool, frame):
    assert_first_table_equals_csv_of(oxprof_bin, fixture(name), tool, frame)


def assert_first_table_equals_csv_of(oxprof_bin, path, tool, frame):
    """A report's first table against `oxprof data TOOL PATH --format csv`."""
    name = path.name
    text = run_cli(oxprof_bin, "data", tool, path, "--format", "csv").stdout
    header, *rows = list(csv.reader(io.StringIO(text)))
    assert header == [label or col for col, label in frame.attrs["labels"].items()]
    assert len(rows) == len(frame)
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            if value in ("True", "False"):
                value = value == "True"
            assert same_value(frame.iat[i, j], value), (name, tool, i, j, frame.iat[i, j], value)


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("tool", DATATABLE_TOOLS + ["op_profile", "memory_profile", "pod_viewer"])
def test_typed_report_and_markdown_equal_the_cli(oxprof_bin, name, tool):
    report = oxprof.open(fixture(name)).tool(tool)
    assert report.json == cli_json(oxprof_bin, "data", tool, fixture(name), "--format", "report")
    markdown = run_cli(oxprof_bin, "data", tool, fixture(name), "--format", "md").stdout
    # The CLI puts oxprof's notes before the tables.
    notes = "".join(f"> **Note:** {note}\n\n" for note in report.notes)
    assert markdown == notes + (report.markdown or "")


def test_parameters_and_hosts_reach_the_tool(oxprof_bin):
    profile = oxprof.open(fixture("jax_train"))
    (run,) = profile.runs
    assert profile.hosts == {run: ["vm"]}
    by_category = profile.tool("op_profile", host="vm", run=run, group_by="category")
    assert by_category.host == "vm" and by_category.run == run
    expected = cli_json(
        oxprof_bin, "data", "op_profile", fixture("jax_train"), "--host", "vm", "--param", "group_by=category"
    )
    assert json.loads(by_category.xprof_body) == expected
    assert by_category.xprof_body != profile.tool("op_profile").xprof_body


def test_aliases_resolve_to_the_tool():
    report = oxprof.open(fixture("tf_custom_loop")).tool("tensorflow_stats")
    assert report.tool == "framework_op_stats"
