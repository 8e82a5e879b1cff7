"""`Profile.query(sql)`: DataFrames equal to `oxprof query` (the wheel's own command), the
documented dtypes, and the CLI's one-line errors as exceptions."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import oxprof
from conftest import FIXTURES, REPO, cli_error, fixture, run_cli

QUERIES = [
    "SELECT name, count(*) AS n, sum(dur) AS total FROM slice GROUP BY name ORDER BY total DESC, name LIMIT 20",
    "SELECT id, ts, dur, track_id, name, category, depth, parent_id, arg_set_id, group_id, run, host "
    "FROM slice ORDER BY id LIMIT 50",
    "SELECT t.name AS track, count(*) AS n FROM slice s JOIN thread_track t ON s.track_id = t.id "
    "AND s.run = t.run AND s.host = t.host GROUP BY t.name ORDER BY n DESC, track",
    "SELECT key, value_type, count(*) AS n FROM args GROUP BY key, value_type ORDER BY n DESC, key",
    "SELECT * FROM op_stats ORDER BY host_or_device, operation, type LIMIT 30",
    "SELECT * FROM steps ORDER BY host, step_num",
    "SELECT * FROM kernel_by_op ORDER BY total_us DESC, op_name LIMIT 10",
]


def _same(a, b) -> bool:
    """Cells equal as the JSON output writes them (reals within 1e-9 relative)."""
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)):
        return (a is None or (isinstance(a, float) and math.isnan(a))) and (
            b is None or (isinstance(b, float) and math.isnan(b))
        )
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _records(frame: pd.DataFrame) -> list:
    """Rows as plain Python values, missing values as None."""
    out = []
    for row in frame.astype(object).itertuples(index=False):
        out.append([None if v is pd.NA or v is None else (v.item() if hasattr(v, "item") else v) for v in row])
    return out


@pytest.mark.parametrize("name", FIXTURES)
def test_query_equals_the_cli(oxprof_bin, name):
    path = fixture(name)
    profile = oxprof.open(path)
    for sql in QUERIES:
        frame = profile.query(sql)
        expected = json.loads(run_cli(oxprof_bin, "query", sql, path, "--format", "json").stdout)
        # The JSON output leaves NULL cells out of a row's object.
        columns = list(frame.columns)
        assert all(set(row) <= set(columns) for row in expected), sql
        got = _records(frame)
        assert len(got) == len(expected), sql
        for row, want in zip(got, expected):
            assert all(_same(a, want.get(c)) for a, c in zip(row, columns)), (sql, row, want)
        header = run_cli(oxprof_bin, "query", sql, path, "--format", "csv").stdout.splitlines()[0]
        assert header.split(",") == columns, sql


def test_query_dtypes_are_documented():
    profile = oxprof.open(fixture("jax_train"))
    frame = profile.query("SELECT id, ts, dur, name, category, depth, parent_id, run, host FROM slice LIMIT 5")
    ints = {c: str(t) for c, t in frame.dtypes.items() if c in ("id", "ts", "dur", "depth", "parent_id")}
    assert ints == {"id": "Int64", "ts": "Int64", "dur": "Int64", "depth": "Int32", "parent_id": "Int64"}
    for text in ("name", "category", "run", "host"):
        assert pd.api.types.is_string_dtype(frame.dtypes[text]), (text, frame.dtypes[text])
    reals = profile.query("SELECT avg(dur) AS mean, count(*) AS n FROM slice")
    assert str(reals.dtypes["mean"]) == "float64" and str(reals.dtypes["n"]) == "Int64"
    table = profile.query_arrow("SELECT id, name FROM slice LIMIT 3")
    assert [str(f.type) for f in table.schema] == ["int64", "string"]


def test_a_run_selects_one_run(oxprof_bin):
    path = REPO / "testdata" / "demo"
    profile = oxprof.open(path)
    every = profile.query("SELECT DISTINCT run FROM slice ORDER BY run")
    assert len(every) == len(profile.runs) > 1
    one = profile.runs[-1]
    only = profile.query("SELECT DISTINCT run FROM slice", run=one)
    assert list(only["run"]) == [one]


@pytest.mark.parametrize(
    "sql, says",
    [
        ("SELEC 1", "syntax"),
        ("SELECT * FROM nope", "the tables are slice"),
        ("COPY (SELECT 1) TO '/tmp/x.csv'", "refused"),
    ],
)
def test_bad_sql_raises_the_clis_line(oxprof_bin, sql, says):
    path = fixture("jax_train")
    line = cli_error(oxprof_bin, "query", sql, path)
    with pytest.raises(oxprof.QueryError) as caught:
        oxprof.open(path).query(sql)
    assert str(caught.value) == line
    assert says.lower() in line.lower()
    assert isinstance(caught.value, ValueError)


def test_an_unknown_run_raises_the_clis_line(oxprof_bin):
    path = REPO / "testdata" / "demo"
    line = cli_error(oxprof_bin, "query", "SELECT 1", path, "--run", "no_such_run")
    with pytest.raises(oxprof.UnknownRun) as caught:
        oxprof.open(path).query("SELECT 1", run="no_such_run")
    assert str(caught.value) == line
