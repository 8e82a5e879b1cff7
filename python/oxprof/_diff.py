"""Comparing runs: ``oxprof.diff(a, b)`` and ``Profile.diff(other)`` → :class:`Diff`, the
comparison ``oxprof diff`` prints (B against A, the baseline), with one pandas DataFrame per
section: steps (and the input share), framework ops, GPU kernels, HLO ops, memory, gates."""

from __future__ import annotations

import json
import os
from functools import cached_property
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Union

from . import _oxprof

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = ["diff", "Diff"]

#: The op sections by the name of their table.
OP_TABLES = {"framework_ops": "framework_op", "kernels": "kernel", "hlo_ops": "hlo_op"}
#: The compared metrics of an op, each with columns ``<metric>_a``, ``_b``, ``_delta``,
#: ``_relative`` and ``_beyond_noise``.
OP_METRICS = ("time_us", "self_time_us", "count", "mean_us")
# PyTorch operators' device times (framework ops of PyTorch runs only).
DEVICE_METRICS = ("device_time_us", "device_self_time_us")


def diff(
    a: Union[str, os.PathLike],
    b: Union[str, os.PathLike],
    *,
    run_a: Optional[str] = None,
    run_b: Optional[str] = None,
    host: Optional[str] = None,
    host_a: Optional[str] = None,
    host_b: Optional[str] = None,
    strip_templates: bool = False,
    fail_if: Sequence[str] = (),
    noise_check: bool = True,
    max_profile_bytes: Optional[int] = None,
    persistent_cache: bool = True,
    cache_dir: Optional[Union[str, os.PathLike]] = None,
    cache_dir_bytes: int = 4096 << 20,
) -> "Diff":
    """Compares run B with run A (the baseline), as ``oxprof diff A B``.

    ``a`` and ``b`` are log directories, run directories, profile files or summaries written
    by ``oxprof summary``. ``run_a``/``run_b`` name a run of a log directory (default: the
    newest); ``host`` selects one host on both sides (default: every host, ``ALL_HOSTS``),
    ``host_a``/``host_b`` one side's. ``fail_if`` are CI gates (``"step_time>+5%"``), see
    :attr:`Diff.tripped`. Decoding and analysis release the GIL. Profiles' analyses are
    read from and written to the persistent analysis cache as :func:`oxprof.open` does
    (``persistent_cache``, ``cache_dir``, ``cache_dir_bytes``).
    """
    from ._profile import _warn_about_the_cache

    text, markdown, cache_warning = _oxprof.diff(
        os.fspath(a),
        os.fspath(b),
        run_a=run_a,
        run_b=run_b,
        host_a=host_a if host_a is not None else host,
        host_b=host_b if host_b is not None else host,
        strip_templates=strip_templates,
        fail_if=list(fail_if),
        noise_check=noise_check,
        max_profile_bytes=max_profile_bytes,
        persistent_cache=persistent_cache,
        cache_dir=None if cache_dir is None else os.fspath(cache_dir),
        cache_dir_bytes=cache_dir_bytes,
    )
    _warn_about_the_cache(cache_warning)
    return Diff(json.loads(text), markdown)


class Diff:
    """The comparison of two runs.

    * :attr:`tables`: one DataFrame per section (``steps``, ``framework_ops``, ``kernels``,
      ``hlo_ops``, ``memory``, ``gates``; a section neither run has is left out, see
      :attr:`notes`), also as properties (:attr:`steps`, :attr:`framework_ops`, …).
    * :attr:`json`: the typed comparison (``oxprof diff --format json``).
    * :attr:`markdown`: what ``oxprof diff`` prints.
    * :attr:`tripped`: whether a ``fail_if`` gate tripped (the CLI exits 1).
    """

    def __init__(self, report: Dict[str, Any], markdown: str):
        self.json = report
        self.markdown = markdown

    @property
    def notes(self) -> List[str]:
        """What was not compared and why."""
        return list(self.json.get("notes", []))

    @property
    def tripped(self) -> bool:
        """Whether any gate tripped."""
        return bool(self.json.get("tripped"))

    @cached_property
    def tables(self) -> "Dict[str, pandas.DataFrame]":
        """One DataFrame per section the comparison has, in reading order."""
        import pandas as pd

        out: Dict[str, pd.DataFrame] = {}
        steps = self._steps_frame()
        if steps is not None:
            out["steps"] = steps
        kinds = {ops["kind"]: ops for ops in self.json.get("ops", [])}
        for table, kind in OP_TABLES.items():
            if kind in kinds:
                out[table] = _ops_frame(kinds[kind])
        memory = self.json.get("memory")
        if memory:
            out["memory"] = pd.DataFrame([_memory_row(m) for m in memory["allocators"]])
        if self.json.get("gates"):
            out["gates"] = pd.DataFrame(self.json["gates"])
        return out

    def _steps_frame(self) -> "Optional[pandas.DataFrame]":
        import pandas as pd

        metrics = list((self.json.get("steps") or {}).get("metrics", []))
        if self.json.get("input"):
            metrics.append(self.json["input"]["share"])
        if not metrics:
            return None
        rows = []
        for m in metrics:
            test = m.get("test") or {}
            rows.append(
                {
                    "metric": m["name"],
                    "label": m["label"],
                    "unit": m["unit"],
                    **_change(m["change"]),
                    "p_value": test.get("p_value"),
                    "hedges_g": test.get("hedges_g"),
                    "n_a": test.get("n_a"),
                    "n_b": test.get("n_b"),
                }
            )
        return _typed(pd.DataFrame(rows))

    def _section(self, name: str) -> "pandas.DataFrame":
        import pandas as pd

        return self.tables.get(name, pd.DataFrame())

    @property
    def steps(self) -> "pandas.DataFrame":
        """Step time and each category (ms), then the input share (percent): A, B, change,
        p-value, Hedges' g and the noise verdict (``beyond_noise``: missing with too few
        steps)."""
        return self._section("steps")

    @property
    def framework_ops(self) -> "pandas.DataFrame":
        """Framework ops (``list``: ``both``, ``only_in_a``, ``only_in_b``), largest
        self-time change first within each list."""
        return self._section("framework_ops")

    @property
    def kernels(self) -> "pandas.DataFrame":
        """GPU kernels, as :attr:`framework_ops`."""
        return self._section("kernels")

    @property
    def hlo_ops(self) -> "pandas.DataFrame":
        """HLO ops, as :attr:`framework_ops`."""
        return self._section("hlo_ops")

    @property
    def memory(self) -> "pandas.DataFrame":
        """Each allocator's peak, lifetime peak and fragmentation."""
        return self._section("memory")

    def _repr_markdown_(self) -> str:
        return self.markdown

    def __repr__(self) -> str:
        a, b = self.json["a"]["label"], self.json["b"]["label"]
        return f"<oxprof.Diff {b!r} against {a!r}>"


def _change(change: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    return {
        f"{prefix}a": change["a"],
        f"{prefix}b": change["b"],
        f"{prefix}delta": change["delta"],
        f"{prefix}relative": change["relative"],
        f"{prefix}beyond_noise": change["beyond_noise"],
    }


def _ops_frame(ops: Dict[str, Any]) -> "pandas.DataFrame":
    import pandas as pd

    metrics = OP_METRICS + (DEVICE_METRICS if ops.get("total_device_self_time_us") else ())
    rows = []
    for list_name, key in (("both", "matched"), ("only_in_a", "only_in_a"), ("only_in_b", "only_in_b")):
        for op in ops[key]:
            row = {"list": list_name, "name": op["name"], "category": op["category"], "context": op["context"]}
            for metric in metrics:
                row.update(_change(op[metric], f"{metric}_"))
            row["names"] = op["names"]
            rows.append(row)
    columns = ["list", "name", "category", "context"]
    columns += [f"{m}_{part}" for m in metrics for part in ("a", "b", "delta", "relative", "beyond_noise")]
    frame = _typed(pd.DataFrame(rows, columns=columns + ["names"]))
    frame.attrs.update({"kind": ops["kind"], "basis": ops["basis"], "counts": ops["counts"]})
    if ops.get("tool"):
        frame.attrs["tool"] = ops["tool"]
    return frame


def _memory_row(m: Dict[str, Any]) -> Dict[str, Any]:
    row = {"allocator": m["allocator"], "presence": m["presence"]}
    for metric in ("peak_bytes", "lifetime_peak_bytes", "fragmentation"):
        row.update(_change(m[metric], f"{metric}_"))
    return row


def _typed(frame: "pandas.DataFrame") -> "pandas.DataFrame":
    """Numbers as float64 (missing: NaN), verdicts as pandas' nullable boolean."""
    for column in frame.columns:
        if column.endswith("beyond_noise"):
            frame[column] = frame[column].astype("boolean")
        elif column.endswith(("_a", "_b", "_delta", "_relative")) or column in ("a", "b", "delta", "relative", "p_value", "hedges_g"):
            frame[column] = frame[column].astype("float64")
    return frame
