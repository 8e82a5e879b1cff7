"""The `oxprof serve` child process behind TensorBoard's oxprof tab: started at the tab's first
request, on 127.0.0.1 at a free port, stopped when TensorBoard exits (or dies: on Linux the
child gets SIGTERM when the thread that started it ends, which is the process's end)."""

from __future__ import annotations

import atexit
import collections
import ipaddress
import os
import re
import signal
import subprocess
import sys
import threading
from typing import Deque, List, Optional, Tuple
from urllib.parse import urlsplit

# How long `oxprof serve` may take to print its URL.
START_SECONDS = 60.0
# The longest line read from the child (its banner and error lines are short).
MAX_LINE_BYTES = 4096
# Lines of the child's output kept for an error message.
KEPT_LINES = 20

_SERVING = re.compile(r"^oxprof: serving .* at (\S+)\s*$")


class ServerError(RuntimeError):
    """The child could not be started, or printed something unexpected; the message says why."""


def loopback_address(url: str) -> Tuple[str, int]:
    """(host, port) of `url` when it is http:// to a loopback IP address with a port; a
    ServerError otherwise (the tab talks to no other address)."""
    parts = urlsplit(url)
    try:
        ip = ipaddress.ip_address(parts.hostname or "")
        port = parts.port
    except ValueError:
        ip, port = None, None
    if parts.scheme != "http" or ip is None or not ip.is_loopback or not port:
        raise ServerError(f"{url!r} is not http:// to a loopback address: the oxprof tab talks to 127.0.0.1 only")
    return str(ip), port


def serving_address(line: str) -> Optional[Tuple[str, int]]:
    """The address of `oxprof: serving ... at http://127.0.0.1:PORT/`, None for another line."""
    match = _SERVING.match(line)
    return None if match is None else loopback_address(match.group(1))


def _parent_death_signal():
    """On Linux, a function for the child (between fork and exec) asking for SIGTERM when
    the thread that started it ends; looked up here, in the parent, so that the child only
    calls it (no import there, with other threads' locks possibly held at the fork)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig, sigterm = 1, int(signal.SIGTERM)
    return lambda: prctl(pr_set_pdeathsig, sigterm, 0, 0, 0)


_DIE_WITH_PARENT = _parent_death_signal()


class ChildServer:
    """`oxprof serve LOGDIR` on 127.0.0.1, started on first use and again if it has exited."""

    def __init__(self, command: List[str]) -> None:
        self._command = command
        self._lock = threading.Lock()
        self._process: Optional[subprocess.Popen] = None
        self._address: Optional[Tuple[str, int]] = None
        self._output: Deque[str] = collections.deque(maxlen=KEPT_LINES)
        atexit.register(self.stop)

    @property
    def command(self) -> List[str]:
        return list(self._command)

    def address(self) -> Tuple[str, int]:
        """(host, port) of the running child, started now if need be (ServerError if it
        cannot be)."""
        with self._lock:
            if self._process is not None and self._process.poll() is None and self._address is not None:
                return self._address
            self._address = None
            return self._start()

    def running(self) -> bool:
        with self._lock:
            return self._process is not None and self._process.poll() is None

    def pid(self) -> Optional[int]:
        with self._lock:
            return None if self._process is None else self._process.pid

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 5 s; nothing if it is not running."""
        with self._lock:
            process, self._process, self._address = self._process, None, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def _start(self) -> Tuple[str, int]:
        started = threading.Event()
        outcome: dict = {}
        # The thread that starts the child lives as long as the child: on Linux the child's
        # parent-death signal fires when that thread ends, so it must not be a request's.
        keeper = threading.Thread(target=self._keep, args=(started, outcome), name="oxprof-serve", daemon=True)
        keeper.start()
        if not started.wait(START_SECONDS):
            outcome.setdefault("error", f"oxprof serve printed no URL within {START_SECONDS:.0f} s")
        process = outcome.get("process")
        if "address" in outcome:
            self._process, self._address = process, outcome["address"]
            return outcome["address"]
        if process is not None and process.poll() is None:
            process.kill()
        said = " | ".join(self._output)
        raise ServerError(f"{outcome.get('error', 'oxprof serve failed')}{': ' + said if said else ''}")

    def _keep(self, started: threading.Event, outcome: dict) -> None:
        try:
            process = subprocess.Popen(
                self._command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                preexec_fn=_DIE_WITH_PARENT,
            )
        except OSError as e:
            outcome["error"] = f"cannot run {self._command[0]}: {e.strerror or e}"
            started.set()
            return
        outcome["process"] = process
        assert process.stdout is not None
        while True:
            raw = process.stdout.readline(MAX_LINE_BYTES)
            if not raw:
                break
            line = raw.decode("utf-8", "replace").rstrip()
            self._output.append(line)
            if started.is_set():
                continue
            try:
                address = serving_address(line)
            except ServerError as e:
                outcome["error"] = str(e)
                started.set()
                process.kill()
                continue
            if address is not None:
                outcome["address"] = address
                self._output.clear()
                started.set()
        # The output has ended: the child has exited (or closed it).
        code = process.wait()
        if not started.is_set():
            outcome["error"] = f"oxprof serve exited with status {code} before serving"
            started.set()


def oxprof_command(binary: str, logdir: str) -> List[str]:
    """`oxprof serve` for the tab: loopback, any free port, framed by pages of its own origin
    only (the tab's page is TensorBoard's, which serves the UI through its plugin route)."""
    return [
        binary,
        "serve",
        os.fspath(logdir),
        "--bind",
        "127.0.0.1",
        "--port",
        "0",
        "--quiet",
        "--frame-ancestors",
        "'self'",
    ]
