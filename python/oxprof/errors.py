"""oxprof's exceptions: one class per kind of failure, each carrying the one-line message
the ``oxprof`` command prints after ``oxprof:``.

::

    Error
    ├── ProfileNotFound   (also FileNotFoundError) nothing to read at the path
    ├── InvalidProfile    (also ValueError)        a profile file cannot be read
    ├── LimitExceeded                               a file is past an input budget
    ├── UnknownRun        (also LookupError)
    ├── UnknownHost       (also LookupError)
    ├── UnknownTool       (also LookupError)       not a tool oxprof computes
    ├── BadParameter      (also ValueError)        a tool parameter is missing or malformed
    ├── QueryError        (also ValueError)        bad or refused SQL, a query past its limits
    └── InternalError                               a bug in oxprof: please report it
"""

from __future__ import annotations

__all__ = [
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


class Error(Exception):
    """Every failure oxprof reports."""


class ProfileNotFound(Error, FileNotFoundError):
    """The path does not exist, cannot be read, or holds no profiles."""


class InvalidProfile(Error, ValueError):
    """A profile file cannot be read: corrupt, truncated, of an unknown format, or changed
    while it was read."""


class LimitExceeded(Error):
    """A profile is past an input budget (``max_profile_bytes`` raises the main one)."""


class UnknownRun(Error, LookupError):
    """No run of that name (the message lists the runs)."""


class UnknownHost(Error, LookupError):
    """No host of that name in the run (the message lists the hosts)."""


class UnknownTool(Error, LookupError):
    """Not a tool oxprof computes (the message lists the tools)."""


class BadParameter(Error, ValueError):
    """A tool parameter is missing or malformed."""


class QueryError(Error, ValueError):
    """``Profile.query``'s SQL is not valid, names an unknown table or column, is not a
    read-only query, or ran past a limit (``oxprof query`` exits 2 with this line)."""


class InternalError(Error):
    """A bug in oxprof; please report it with the message."""


class OxprofWarning(UserWarning):
    """Something oxprof adjusted and says so (e.g. a table column read as text)."""
