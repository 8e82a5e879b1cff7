"""oxprof's tab in TensorBoard: installing the wheel registers this TensorBoard plugin (the
``tensorboard_plugins`` entry point), so ``tensorboard --logdir LOGDIR`` shows an "oxprof"
tab with oxprof's UI over the same log directory.

The tab runs ``oxprof serve LOGDIR`` as a child process on 127.0.0.1 (a free port, started
at the tab's first request, stopped with TensorBoard) and serves its UI through TensorBoard's
own origin, below ``/data/plugin/oxprof/ui/`` (:mod:`._proxy`), so the tab also works when
TensorBoard is reached from another machine. docs/tensorboard.md has the security model.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Optional

from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from ._child import ChildServer, ServerError, oxprof_command
from ._proxy import Proxy

__all__ = ["OxprofPlugin", "has_profiles"]

PLUGIN_NAME = "oxprof"
# The routes' prefix under TensorBoard's root (TensorBoard puts plugin routes there).
UI_PREFIX = f"/data/plugin/{PLUGIN_NAME}/ui"
# The scan of the log directory for profiles: at most this many directory entries, this
# deep, and again after this many seconds when none were found.
SCAN_ENTRIES = 20_000
SCAN_DEPTH = 8
SCAN_AGAIN_SECONDS = 30.0
_PROFILE_SUFFIXES = (".xplane.pb", ".xplane.pb.gz", ".pt.trace.json", ".pt.trace.json.gz")
_STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")


def has_profiles(logdir: str, max_entries: int = SCAN_ENTRIES, max_depth: int = SCAN_DEPTH) -> bool:
    """Whether `logdir` holds a profile oxprof reads (an ``.xplane.pb`` of XProf's
    plugins/profile/RUN/, a PyTorch ``.pt.trace.json``; ``.gz`` too), looking at no more than
    `max_entries` entries `max_depth` deep. Object-store URLs (``gs://``, ``s3://``, ...)
    count as having some: listing them here would be slow."""
    if "://" in logdir:
        return True
    seen = 0
    stack = [(logdir, 0)]
    while stack:
        directory, depth = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > max_entries:
                return False
            if entry.name.endswith(_PROFILE_SUFFIXES):
                return True
            if depth < max_depth and entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, depth + 1))
    return False


def _binary() -> str:
    from ..__main__ import find_binary

    return os.environ.get("OXPROF_BIN") or find_binary()


class OxprofPlugin(base_plugin.TBPlugin):
    """TensorBoard's oxprof tab (see the module's doc)."""

    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext) -> None:
        flags = context.flags
        self._logdir: str = context.logdir or (getattr(flags, "logdir", "") if flags is not None else "") or ""
        host: Optional[str] = getattr(flags, "host", None) if flags is not None else None
        bind_all = bool(getattr(flags, "bind_all", False)) if flags is not None else False
        self._child: Optional[ChildServer] = None
        self._child_error: Optional[str] = None
        if not self._logdir:
            self._child_error = "TensorBoard was started without --logdir: the oxprof tab serves that directory"
        else:
            try:
                self._child = ChildServer(oxprof_command(_binary(), self._logdir))
            except FileNotFoundError as e:
                self._child_error = str(e)
        self._proxy = Proxy(self._child or _Missing(self._child_error or ""), UI_PREFIX, hosts=[host or ""], any_host=bind_all)
        self._active = False
        self._scanned_at = float("-inf")
        self._scan_lock = threading.Lock()

    def get_plugin_apps(self):
        return {
            "/index.js": self._serve_module,
            "/ui": self._proxy,
            "/ui/*": self._proxy,
        }

    def is_active(self) -> bool:
        """True once the log directory holds a profile (checked again every 30 s until one is
        found; see :func:`has_profiles`)."""
        if self._active or not self._logdir:
            return self._active
        with self._scan_lock:
            if time.monotonic() - self._scanned_at >= SCAN_AGAIN_SECONDS:
                self._scanned_at = time.monotonic()
                self._active = has_profiles(self._logdir)
        return self._active

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="oxprof", disable_reload=True)

    @wrappers.Request.application
    def _serve_module(self, request: wrappers.Request) -> wrappers.Response:
        with open(os.path.join(_STATIC, "index.js"), "rb") as f:
            body = f.read()
        return wrappers.Response(
            body,
            content_type="text/javascript; charset=utf-8",
            headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"},
        )

    def stop(self) -> None:
        """Stops the child server (TensorBoard's exit does it too)."""
        if self._child is not None:
            self._child.stop()


class _Missing:
    """Stands for the child when there is none to run: every request says why."""

    def __init__(self, why: str) -> None:
        self._why = why

    def address(self):
        raise ServerError(self._why)

    def stop(self) -> None:
        pass
