"""Profiles and reports: ``open(path)`` → :class:`Profile`; ``Profile.tool(...)`` →
:class:`Report`, whose tables are pandas DataFrames built from Arrow record batches."""

from __future__ import annotations

import json
import os
import warnings
from functools import cached_property
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

from . import _oxprof
from .errors import OxprofWarning

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    import pyarrow

    from ._diff import Diff

__all__ = ["open", "Profile", "Report"]

#: The default bound of a profile's caches (decoded profiles, analyses), in bytes.
DEFAULT_CACHE_BYTES = 512 << 20
#: The default bound of the persistent analysis cache's directory, in bytes (the CLI's).
DEFAULT_CACHE_DIR_BYTES = 4096 << 20


def open(
    path: Union[str, os.PathLike],
    *,
    max_profile_bytes: Optional[int] = None,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
    persistent_cache: bool = True,
    cache_dir: Optional[Union[str, os.PathLike]] = None,
    cache_dir_bytes: int = DEFAULT_CACHE_DIR_BYTES,
) -> "Profile":
    """Opens a log directory, a run directory or one profile file.

    Runs are discovered now (a path without profiles raises
    :class:`~oxprof.ProfileNotFound`); files are read when a tool needs them.
    ``max_profile_bytes`` is the CLI's ``--max-profile-bytes`` (default 2 GiB).
    What the profile computes is kept within ``cache_bytes``, so asking a second tool of
    the same run does not decode it again.

    Each host's analysis also goes to the persistent analysis cache the ``oxprof`` command
    uses (``cache_dir``, else ``$OXPROF_CACHE_DIR``, else ``~/.cache/oxprof``; bounded to
    ``cache_dir_bytes``), so a later process, Python or CLI, answers without decoding the
    file again; an entry is only used for the unchanged file. ``persistent_cache=False``
    neither reads nor writes it (the CLI's ``--no-cache``).
    """
    native = _oxprof.open(
        os.fspath(path),
        max_profile_bytes=max_profile_bytes,
        cache_bytes=cache_bytes,
        persistent_cache=persistent_cache,
        cache_dir=None if cache_dir is None else os.fspath(cache_dir),
        cache_dir_bytes=cache_dir_bytes,
    )
    _warn_about_the_cache(native.cache_warning)
    return Profile(native, max_profile_bytes=max_profile_bytes)


def _warn_about_the_cache(warning: Optional[str]) -> None:
    """The CLI's warning when the persistent cache cannot be opened (answers are unaffected)."""
    if warning:
        # The CLI's line names its flag; say the Python spelling too.
        warnings.warn(f"{warning} (in Python: persistent_cache=False)", OxprofWarning, stacklevel=3)


def _param_text(value: Any) -> str:
    """A tool parameter as the HTTP API and the CLI spell it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Profile:
    """The profiles under one path: its runs, their hosts, and every tool's report."""

    def __init__(self, native: "_oxprof.NativeProfile", max_profile_bytes: Optional[int] = None):
        self._native = native
        self._max_profile_bytes = max_profile_bytes

    @property
    def path(self) -> str:
        """The path as given to :func:`open`."""
        return os.fspath(self._native.path)

    @property
    def runs(self) -> List[str]:
        """Run names, newest first (as XProf sorts them); scanned afresh on each access."""
        return [name for name, _ in self._native.runs()]

    @property
    def hosts(self) -> Dict[str, List[str]]:
        """Each run's host names, sorted: ``{run: [host, ...]}``, newest run first."""
        return {name: hosts for name, hosts in self._native.runs()}

    def cache_info(self) -> Optional[Dict[str, Any]]:
        """The persistent analysis cache this profile uses: ``{"dir", "hits", "misses",
        "rejected", "written", "evicted", "entries", "bytes"}`` (the counts are this
        profile's reads and writes, ``entries``/``bytes`` what the directory holds);
        ``None`` when it is not used."""
        info = self._native.cache_info()
        if info is not None:
            info["dir"] = os.fspath(info["dir"])
        return info

    def tool(self, name: str, host: Optional[str] = None, run: Optional[str] = None, **params: Any) -> "Report":
        """One tool's report (``oxprof.tools()`` lists them; XProf's aliases work too).

        ``run``: a run name (default: the newest). ``host``: one host, or every host of
        the run combined as XProf's ``ALL_HOSTS`` (the default). Further keyword
        arguments are the tool's parameters (``group_by="category"``), as
        ``oxprof data --param KEY=VALUE``. Decoding and analysis release the GIL.
        """
        text_params = {key: _param_text(value) for key, value in params.items()}
        return Report(self._native.tool(name, run=run, host=host, params=text_params))

    def diff(
        self,
        other: "Union[Profile, str, os.PathLike]",
        *,
        run: Optional[str] = None,
        other_run: Optional[str] = None,
        host: Optional[str] = None,
        other_host: Optional[str] = None,
        **options: Any,
    ) -> "Diff":
        """Compares ``other`` (a Profile, a path or a summary file) with this profile
        as the baseline: ``oxprof.diff(self.path, other, ...)``. ``run``/``host`` select
        this side, ``other_run``/``other_host`` the other (default: the other's host is
        this one's); further options as :func:`oxprof.diff`."""
        from ._diff import diff

        other_path = other.path if isinstance(other, Profile) else os.fspath(other)
        return diff(
            self.path,
            other_path,
            run_a=run,
            run_b=other_run,
            host_a=host,
            host_b=other_host if other_host is not None else host,
            **options,
        )

    def query(
        self, sql: str, *, run: Optional[str] = None, timeout: Optional[float] = 600.0
    ) -> "pandas.DataFrame":
        """The answer to one read-only SQL statement over this profile's tables (``slice``,
        ``track``, ``args``, ``steps``, ``op_stats``, …; docs/sql/ documents them) as a
        pandas DataFrame: ``oxprof query SQL PATH --format parquet``, run by the ``oxprof``
        command installed with this package, so answers equal the CLI's.

        ``run``: only that run (default: every run under the path; tables have a ``run``
        column). ``timeout``: seconds before the query is stopped. Integer columns are
        ``Int64`` (``Int32`` for ``slice.depth``), reals ``float64``, text pandas' string
        dtype, booleans ``boolean``; SQL NULLs are missing values. Bad or refused SQL raises
        :class:`~oxprof.QueryError` with the CLI's message.
        """
        _require("pandas", "Profile.query")
        from ._query import query_frame

        return query_frame(sql, self.path, run=run, max_profile_bytes=self._max_profile_bytes, timeout=timeout)

    def query_arrow(self, sql: str, *, run: Optional[str] = None, timeout: Optional[float] = 600.0) -> "pyarrow.Table":
        """As :meth:`query`, the answer as a ``pyarrow.Table`` (the CLI's Arrow types)."""
        _require("pyarrow", "Profile.query_arrow")
        from ._query import query_arrow

        return query_arrow(sql, self.path, run=run, max_profile_bytes=self._max_profile_bytes, timeout=timeout)

    def __repr__(self) -> str:
        return f"<oxprof.Profile {self.path!r}>"


class Report:
    """One tool's output for one run and host selection.

    * :attr:`tables`: every table as a pandas DataFrame (``oxprof[pandas]``).
    * :attr:`arrow`: the same tables as ``pyarrow.Table``\\ s.
    * :attr:`json`: the typed report as Python objects (``oxprof data --format report``).
    * :attr:`xprof_body`: XProf's body, as its server sends it (``--format json``).
    """

    def __init__(self, native: "_oxprof.NativeReport"):
        self._native = native

    @property
    def tool(self) -> str:
        """The tool's name (an alias asked for is resolved)."""
        return self._native.tool

    @property
    def run(self) -> str:
        """The run's name."""
        return self._native.run

    @property
    def host(self) -> Optional[str]:
        """The host asked for; ``None``: every host of the run."""
        return self._native.host

    @cached_property
    def _body(self):
        return self._native.xprof_body()

    @property
    def content_type(self) -> str:
        """The MIME type of :attr:`xprof_body`."""
        return self._body[0]

    @property
    def xprof_body(self) -> Union[str, bytes]:
        """XProf's body, byte for byte what its server returns (``bytes`` when binary)."""
        return self._body[1]

    @cached_property
    def json(self) -> Any:
        """The typed report as Python objects (its serde form; ``None`` for a binary body).
        Non-finite numbers read as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``."""
        text = self._native.report_json()
        return None if text is None else json.loads(text)

    @property
    def notes(self) -> List[str]:
        """oxprof's notes on this output for people (e.g. why no steps were found)."""
        return self._native.notes()

    @cached_property
    def markdown(self) -> Optional[str]:
        """Every table as Markdown (``oxprof data --format md``); ``None`` without tables."""
        return self._native.markdown()

    @cached_property
    def _batches(self) -> "List[tuple[str, pyarrow.RecordBatch]]":
        _require("pyarrow", "Report.arrow")
        out = []
        for name, batch, notes in self._native.arrow_tables():
            for note in notes:
                warnings.warn(note, OxprofWarning, stacklevel=3)
            out.append((name, batch))
        return out

    @cached_property
    def arrow(self) -> "Dict[str, pyarrow.Table]":
        """Every table as a ``pyarrow.Table``, by name, in reading order. Labels, kinds and
        facts are in the schema's metadata (see python/README.md)."""
        import pyarrow as pa

        return {name: pa.Table.from_batches([batch]) for name, batch in self._batches}

    @cached_property
    def tables(self) -> "Dict[str, pandas.DataFrame]":
        """Every table as a pandas DataFrame, by name, in reading order.

        Column dtypes follow each column's kind: integer → ``Int64``, number →
        ``float64``, text → pandas' string dtype, boolean → ``boolean``; empty cells are
        missing values. ``df.attrs`` holds the table's title, facts, row description and
        each column's label, kind and number format.
        """
        _require("pandas", "Report.tables")
        return {name: _data_frame(batch) for name, batch in self._batches}

    def _repr_markdown_(self) -> Optional[str]:
        return self.markdown

    def __repr__(self) -> str:
        host = self.host or "all hosts"
        return f"<oxprof.Report {self.tool} of run {self.run!r}, {host}>"


def _require(module: str, what: str) -> None:
    try:
        __import__(module)
    except ImportError as e:
        raise ImportError(f"{what} needs pandas and pyarrow: pip install 'oxprof[pandas]'") from e


def _data_frame(batch: "pyarrow.RecordBatch") -> "pandas.DataFrame":
    import pandas as pd
    import pyarrow as pa

    # Stable dtypes whatever the values: integers and booleans keep their type with
    # missing values (pyarrow's default would make them float64 / object).
    dtypes = {pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
    frame = batch.to_pandas(types_mapper=dtypes.get)
    frame.attrs.update(_table_attrs(batch.schema))
    return frame


def _table_attrs(schema: "pyarrow.Schema") -> Dict[str, Any]:
    """What a table says besides its cells, from the metadata oxprof-arrow writes."""

    def text(meta, key):
        value = (meta or {}).get(key.encode())
        return None if value is None else value.decode()

    meta = schema.metadata
    shown = text(meta, "oxprof:shown_rows")
    facts = text(meta, "oxprof:facts")
    return {
        "name": text(meta, "oxprof:table"),
        "title": text(meta, "oxprof:title"),
        "facts": dict(json.loads(facts)) if facts else {},
        "rows_description": text(meta, "oxprof:rows_description"),
        "shown_rows": None if shown is None else int(shown),
        "labels": {f.name: text(f.metadata, "oxprof:label") for f in schema},
        "kinds": {f.name: text(f.metadata, "oxprof:kind") for f in schema},
        "formats": {f.name: text(f.metadata, "oxprof:format") for f in schema},
    }
