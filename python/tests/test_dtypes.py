"""DataFrame columns and dtypes, as python/README.md documents them."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import oxprof
from conftest import FIXTURES, documented_columns, fixture

PANDAS_DTYPE_OF_KIND = {
    "integer": lambda s: isinstance(s.dtype, pd.Int64Dtype),
    "number": lambda s: s.dtype == "float64",
    "text": lambda s: pd.api.types.is_string_dtype(s.dtype) or s.dtype == object,
    "boolean": lambda s: isinstance(s.dtype, pd.BooleanDtype),
}
ARROW_TYPE_OF_KIND = {"integer": pa.int64(), "number": pa.float64(), "text": pa.string(), "boolean": pa.bool_()}

# The first table of framework_op_stats, as python/README.md shows it.
FRAMEWORK_OP_STATS_TABLE = "For example, `framework_op_stats`"


def tools_with_tables():
    return [t["name"] for t in oxprof.tools() if t["family"] != "trace"]


@pytest.mark.parametrize("name", FIXTURES)
def test_every_column_has_the_dtype_of_its_kind(name):
    profile = oxprof.open(fixture(name))
    kinds_seen = set()
    for tool in tools_with_tables():
        try:
            report = profile.tool(tool)
        except oxprof.Error:
            continue  # a tool this profile cannot answer (no HLO, no device)
        for table_name, frame in report.tables.items():
            arrow = report.arrow[table_name]
            assert frame.attrs["name"] == table_name
            assert list(frame.columns) == arrow.column_names
            for column in frame.columns:
                kind = frame.attrs["kinds"][column]
                kinds_seen.add(kind)
                assert PANDAS_DTYPE_OF_KIND[kind](frame[column]), (tool, table_name, column, kind, frame[column].dtype)
                assert arrow.schema.field(column).type == ARROW_TYPE_OF_KIND[kind]
    # The test means something only if the fixtures hold these kinds.
    assert {"number", "text"} <= kinds_seen, kinds_seen


def test_framework_op_stats_columns_are_as_documented():
    report = oxprof.open(fixture("tf_custom_loop")).tool("framework_op_stats")
    name, frame = next(iter(report.tables.items()))
    dtypes = {column: ("str" if pd.api.types.is_string_dtype(dtype) else str(dtype)) for column, dtype in frame.dtypes.items()}
    documented = documented_columns(FRAMEWORK_OP_STATS_TABLE)
    assert len(documented) == 19 and dtypes == documented, name
    assert len(frame) > 10
    assert frame["total_self_time"].sum() > 0
    assert frame.attrs["labels"]["total_self_time"] == "Total self-time (us)"


def test_empty_cells_are_missing_values_and_integers_stay_integers():
    # memory_profile's tables hold integer columns (bytes) with empty cells.
    report = oxprof.open(fixture("tf_memory")).tool("memory_profile")
    integer_columns = [
        (name, column) for name, frame in report.tables.items() for column, kind in frame.attrs["kinds"].items() if kind == "integer"
    ]
    assert integer_columns, {name: frame.attrs["kinds"] for name, frame in report.tables.items()}
    for name, column in integer_columns:
        assert isinstance(report.tables[name][column].dtype, pd.Int64Dtype)


def test_arrow_tables_carry_the_metadata():
    report = oxprof.open(fixture("jax_train")).tool("overview_page")
    for name, table in report.arrow.items():
        assert table.schema.metadata[b"oxprof:table"] == name.encode()
        for field in table.schema:
            assert b"oxprof:kind" in field.metadata and b"oxprof:label" in field.metadata
