"""oxprof: XProf's analyses of ML profiles (TensorFlow, JAX, PyTorch/XLA XSpace files),
a fast web UI, and the reports as pandas DataFrames.

::

    import oxprof

    profile = oxprof.open("logs/")               # a log directory, run directory or file
    profile.runs                                 # run names, newest first
    profile.hosts                                # {run: [host, ...]}
    report = profile.tool("framework_op_stats")  # newest run, every host combined
    report.tables                                # {name: pandas.DataFrame}
    report.json                                  # the typed report as Python objects
    profile.query("SELECT name, count(*) AS n FROM slice GROUP BY name")  # SQL → DataFrame
    oxprof.diff("before/", "after/").steps       # oxprof diff: a DataFrame per section
    oxprof.serve("logs/")                        # the web UI (inline in a notebook)

The ``oxprof`` command installed with this package is the same program as
``cargo install oxprof``: ``oxprof serve LOGDIR``, ``oxprof data TOOL PATH``.
"""

from ._diff import Diff, diff
from ._oxprof import __version__
from ._profile import Profile, Report, open
from ._serve import Server, running_servers, serve
from .errors import (
    BadParameter,
    Error,
    InternalError,
    InvalidProfile,
    LimitExceeded,
    OxprofWarning,
    ProfileNotFound,
    QueryError,
    UnknownHost,
    UnknownRun,
    UnknownTool,
)

__all__ = [
    "__version__",
    "open",
    "diff",
    "serve",
    "tools",
    "running_servers",
    "Profile",
    "Report",
    "Diff",
    "Server",
    "Error",
    "ProfileNotFound",
    "InvalidProfile",
    "LimitExceeded",
    "UnknownRun",
    "UnknownHost",
    "UnknownTool",
    "BadParameter",
    "QueryError",
    "InternalError",
    "OxprofWarning",
]


def tools() -> list:
    """The tools oxprof computes: ``[{"name", "aliases", "title", "summary", "family"}]``."""
    from . import _oxprof

    return _oxprof.tools()
