"""SQL over profiles: ``Profile.query(sql)`` → a pandas DataFrame.

The wheel's extension module is built without DataFusion (it would double the wheel and
its build time), so a query runs the ``oxprof`` command installed with this package —
``oxprof query SQL PATH --format parquet`` — and reads the Parquet file it writes to
stdout with pyarrow. Answers are therefore exactly the CLI's; its one-line errors become
the exceptions of :mod:`oxprof.errors`.
"""

from __future__ import annotations

import io
import os
import subprocess
from typing import TYPE_CHECKING, List, Optional

from .errors import Error, QueryError

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    import pyarrow

__all__ = ["query_arrow", "query_frame"]

#: Wall time a query may take before it is stopped, in seconds (the CLI has no limit).
DEFAULT_TIMEOUT_S = 600.0


def _command(
    sql: str, path: str, run: Optional[str], max_profile_bytes: Optional[int]
) -> List[str]:
    from .__main__ import find_binary

    args = [find_binary(), "query", sql, path, "--format", "parquet"]
    if run is not None:
        args += ["--run", run]
    if max_profile_bytes is not None:
        args += ["--max-profile-bytes", str(max_profile_bytes)]
    return args


#: What the profile layer's messages say, by the class `.tool()` raises for them (the CLI
#: exits 2 for these and for SQL errors alike, so they are told apart by their text: the
#: fixed parts of `oxprof_format`'s and `oxprof_api`'s error messages).
_MESSAGE_CLASSES = [
    ("no run named", "UnknownRun"),
    ("raise the limit if the file is genuine", "LimitExceeded"),
    ("no profiles found", "ProfileNotFound"),
    (": cannot read: ", "ProfileNotFound"),
    ("re-copy or re-capture the profile", "InvalidProfile"),
    ("not a profile oxprof reads", "InvalidProfile"),
    ("the file changed while it was being read", "InvalidProfile"),
]


def _error(stderr: bytes, returncode: int) -> Error:
    """The CLI's failure as the exception of its kind, with the CLI's one line."""
    from . import errors

    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    line = lines[-1] if lines else f"oxprof query exited {returncode} without a message"
    message = line[len("oxprof: ") :] if line.startswith("oxprof: ") else line
    if returncode != 2:
        return errors.InternalError(message)
    for says, cls in _MESSAGE_CLASSES:
        if says in message:
            return getattr(errors, cls)(message)
    return QueryError(message)


def query_arrow(
    sql: str,
    path: str,
    *,
    run: Optional[str] = None,
    max_profile_bytes: Optional[int] = None,
    timeout: Optional[float] = DEFAULT_TIMEOUT_S,
) -> "pyarrow.Table":
    """``oxprof query SQL PATH --format parquet`` as a ``pyarrow.Table``."""
    import pyarrow.parquet as pq

    args = _command(sql, path, run, max_profile_bytes)
    try:
        done = subprocess.run(args, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        raise QueryError(f"query cancelled: it ran longer than the {timeout} s timeout; narrow it or raise timeout=") from e
    if done.returncode != 0:
        raise _error(done.stderr, done.returncode)
    return pq.read_table(io.BytesIO(done.stdout))


def query_frame(
    sql: str,
    path: "os.PathLike[str] | str",
    *,
    run: Optional[str] = None,
    max_profile_bytes: Optional[int] = None,
    timeout: Optional[float] = DEFAULT_TIMEOUT_S,
) -> "pandas.DataFrame":
    """The answer as a DataFrame with nullable integer and boolean dtypes."""
    import pandas as pd
    import pyarrow as pa

    table = query_arrow(sql, os.fspath(path), run=run, max_profile_bytes=max_profile_bytes, timeout=timeout)
    # As `.tool()` tables: integers and booleans keep their type with missing values.
    dtypes = {
        pa.int64(): pd.Int64Dtype(),
        pa.int32(): pd.Int32Dtype(),
        pa.uint64(): pd.UInt64Dtype(),
        pa.bool_(): pd.BooleanDtype(),
    }
    return table.to_pandas(types_mapper=dtypes.get)
