"""``serve(path)``: oxprof's web UI for a notebook, served from this process on
127.0.0.1 until :meth:`Server.stop` (or the interpreter exits)."""

from __future__ import annotations

import atexit
import html
import os
import threading
from typing import List, Optional, Union

from . import _oxprof

__all__ = ["serve", "Server", "running_servers"]

_lock = threading.Lock()
# Servers run until stopped, even when the caller keeps no reference to them.
_running: List["Server"] = []


class Server(str):
    """A running server. It *is* its URL (a ``str``: ``http://127.0.0.1:PORT/``), and in
    a notebook it displays as the UI in an iframe."""

    _native: "_oxprof.NativeServer"
    height: int

    def __new__(cls, native: "_oxprof.NativeServer", height: int = 800) -> "Server":
        self = super().__new__(cls, native.url)
        self._native = native
        self.height = height
        return self

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/``."""
        return str.__str__(self)

    @property
    def port(self) -> int:
        """The port it listens on."""
        return self._native.port

    @property
    def running(self) -> bool:
        """Whether it still serves."""
        return self._native.running

    def stop(self) -> None:
        """Stops serving (requests in flight get 2 s). A second call does nothing."""
        self._native.stop()
        with _lock:
            _running[:] = [s for s in _running if s is not self]

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "serving" if self.running else "stopped"
        return f"<oxprof.Server {self.url} ({state})>"

    def _repr_html_(self) -> str:
        if not self.running:
            return f"<p>oxprof server at {html.escape(self.url)} is stopped.</p>"
        url = html.escape(self.url, quote=True)
        return (
            f'<iframe src="{url}" width="100%" height="{int(self.height)}" '
            f'style="border: 1px solid #ddd" title="oxprof"></iframe>'
            f'<p><a href="{url}" target="_blank" rel="noopener">Open oxprof in a new tab</a></p>'
        )


def serve(
    path: Optional[Union[str, os.PathLike]] = None,
    port: int = 0,
    *,
    height: int = 800,
    cache_bytes: int = 512 << 20,
    max_profile_bytes: Optional[int] = None,
    log_requests: bool = False,
    persistent_cache: bool = True,
    cache_dir: Optional[Union[str, os.PathLike]] = None,
    cache_dir_bytes: int = 4096 << 20,
) -> Server:
    """Serves the web UI for a log directory, run directory or profile file (``None``:
    the bundled demo) on 127.0.0.1:``port`` (0: any free port), in a background thread of
    this process, and returns the :class:`Server`: its URL, which a notebook displays as
    the UI in an iframe ``height`` pixels high.

    The UI may be framed only by pages served from loopback (a local Jupyter); from a
    remote notebook, open the URL through a tunnel instead. Analyses go to the persistent
    analysis cache as with :func:`oxprof.open` (``persistent_cache``, ``cache_dir``,
    ``cache_dir_bytes``), as ``oxprof serve`` does.
    """
    from ._profile import _warn_about_the_cache

    native = _oxprof.serve(
        None if path is None else os.fspath(path),
        port=port,
        cache_bytes=cache_bytes,
        max_profile_bytes=max_profile_bytes,
        embeddable=True,
        log_requests=log_requests,
        persistent_cache=persistent_cache,
        cache_dir=None if cache_dir is None else os.fspath(cache_dir),
        cache_dir_bytes=cache_dir_bytes,
    )
    _warn_about_the_cache(native.cache_warning)
    server = Server(native, height=height)
    with _lock:
        _running.append(server)
    return server


def running_servers() -> List[Server]:
    """The servers :func:`serve` started that still run."""
    with _lock:
        return list(_running)


@atexit.register
def _stop_all() -> None:
    for server in running_servers():
        server.stop()
