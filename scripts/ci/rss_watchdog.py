#!/usr/bin/env python3
"""An RSS watchdog: runs a command (or watches a process), polls its resident memory
(/proc/PID/status VmRSS) every few milliseconds, kills it with SIGKILL past a cap, and
reports the peak.

    scripts/ci/rss_watchdog.py --cap-mb 1536 -- target/release/oxprof serve DIR --port 0
    scripts/ci/rss_watchdog.py --cap-mb 1536 --pid 1234

Prints one JSON line on stderr when the process ends: {"peak_mb", "killed", "exit"}.
Exit status: the command's, or 137 when the watchdog killed it. Linux only.

Also a module: `Watchdog(pid, cap_mb)` polls in a thread (`peak_mb`, `killed`, `stop()`);
scripts/ci/sql-fuzz-smoke.py uses it.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time


def rss_mb(pid):
    """The resident memory of `pid` in MB (10^6 bytes), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024 / 1e6
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return None
    return None


class Watchdog:
    """Polls a process's RSS in a daemon thread; kills it past `cap_mb`."""

    def __init__(self, pid, cap_mb, interval=0.01):
        self.pid = pid
        self.cap_mb = cap_mb
        self.interval = interval
        self.peak_mb = 0.0
        self.killed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            mb = rss_mb(self.pid)
            if mb is None:
                return
            self.peak_mb = max(self.peak_mb, mb)
            if mb > self.cap_mb and not self.killed:
                self.killed = True
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                return
            time.sleep(self.interval)

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cap-mb", type=float, required=True, help="kill past this RSS (MB)")
    parser.add_argument("--pid", type=int, help="watch this process instead of running a command")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.pid is None and not command:
        parser.error("give --pid or a command after --")
    if args.pid is not None:
        dog = Watchdog(args.pid, args.cap_mb)
        dog._thread.join()
        status = 137 if dog.killed else 0
    else:
        child = subprocess.Popen(command)
        dog = Watchdog(child.pid, args.cap_mb)
        status = child.wait()
        dog.stop()
        if dog.killed:
            status = 137
    print(json.dumps({"peak_mb": round(dog.peak_mb, 1), "killed": dog.killed, "exit": status}), file=sys.stderr)
    sys.exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    main()
