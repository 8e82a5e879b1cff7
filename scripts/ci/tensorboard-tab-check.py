#!/usr/bin/env python3
"""TensorBoard's oxprof tab in a real browser: starts PyPI's `tensorboard` (installed, with
the oxprof wheel, in the environment of the Python that runs this) on a copy of one of
testdata/profiles on 127.0.0.1, opens the tab in Debian's chromium
(scripts/ci/tensorboard-tab-check.mjs) and checks that the overview inside it shows the
average step time `oxprof data overview_page` gives; then stops TensorBoard and checks that
the `oxprof serve` it started has stopped too.

Bounded: TensorBoard has 120 s to listen, the browser 300 s; everything it starts is
stopped and its temporary directory removed, whatever happens.
Usage: python tensorboard-tab-check.py [--fixture tf_custom_loop] [--keep-screenshot PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def oxprof_binary() -> str:
    scripts = Path(sys.executable).parent
    found = scripts / "oxprof"
    if not found.is_file():
        sys.exit(f"tensorboard-tab-check: no oxprof beside {sys.executable}: install the wheel into this environment")
    return str(found)


def expected_step_time(binary: str, logdir: Path, cache: Path) -> tuple:
    """(run, the overview's average step time as the UI shows it: '<ms> ms')."""
    env = {**os.environ, "OXPROF_CACHE_DIR": str(cache)}
    # XProf's run: the directory of plugins/profile/ (one per fixture).
    run = sorted(p.name for p in (logdir / "plugins" / "profile").iterdir())[0]
    command = [binary, "data", "overview_page", str(logdir), "--run", run, "--format", "json"]
    body = subprocess.run(command, capture_output=True, text=True, check=True, env=env, timeout=300).stdout
    for table in json.loads(body):
        if isinstance(table, dict) and any(col.get("id") == "stepnum" for col in table.get("cols", [])):
            return run, f"{table['p']['steptime_ms_average']} ms"
    sys.exit("tensorboard-tab-check: the overview has no step table")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def servers_of(logdir: Path) -> list:
    """Pids of `oxprof serve` processes serving `logdir`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 2 and argv[0].endswith(b"oxprof") and argv[1] == b"serve" and argv[2] == str(logdir).encode():
            if alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fixture", default="tf_custom_loop")
    parser.add_argument("--keep-screenshot", metavar="PATH")
    args = parser.parse_args()
    binary = oxprof_binary()
    tensorboard = Path(sys.executable).parent / "tensorboard"
    if not tensorboard.is_file():
        sys.exit(f"tensorboard-tab-check: no tensorboard beside {sys.executable}: pip install tensorboard")
    work = Path(tempfile.mkdtemp(prefix="oxprof-tb-check-"))
    board = None
    try:
        logdir = work / "logs"
        shutil.copytree(REPO / "testdata" / "profiles" / args.fixture / "plugins", logdir / "plugins")
        cache = work / "cache"
        run, expected = expected_step_time(binary, logdir, cache)
        print(f"tensorboard-tab-check: {args.fixture} run {run}: average step time {expected}")
        log = open(work / "tensorboard.log", "w+")
        env = {**os.environ, "OXPROF_CACHE_DIR": str(cache)}
        # Loopback only; the Python data path (no data server process); no plugins' network
        # use (TensorBoard has none to turn off by default).
        board = subprocess.Popen(
            [str(tensorboard), "--logdir", str(logdir), "--host", "127.0.0.1", "--port", "0", "--load_fast=false"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        url = None
        deadline = time.monotonic() + 120
        while url is None and time.monotonic() < deadline and board.poll() is None:
            log.seek(0)
            match = re.search(r"(http://127\.0\.0\.1:\d+/)", log.read())
            url = match.group(1) if match else None
            if url is None:
                time.sleep(0.2)
        if url is None:
            log.seek(0)
            sys.exit(f"tensorboard-tab-check: TensorBoard did not listen within 120 s:\n{log.read()}")
        print(f"tensorboard-tab-check: TensorBoard at {url}")
        screenshot = args.keep_screenshot or str(work / "tab.png")
        node = subprocess.run(
            ["node", str(REPO / "scripts" / "ci" / "tensorboard-tab-check.mjs"), url, run, expected, screenshot],
            timeout=300,
            check=False,
        )
        serving = servers_of(logdir)
        if node.returncode != 0:
            log.seek(0)
            print(log.read()[-4000:], file=sys.stderr)
            return 1
        if len(serving) != 1:
            print(f"tensorboard-tab-check: expected one oxprof serve for the tab, found {serving}", file=sys.stderr)
            return 1
        board.send_signal(signal.SIGTERM)
        board.wait(timeout=60)
        board = None
        for _ in range(100):
            if not alive(serving[0]):
                break
            time.sleep(0.1)
        else:
            print(f"tensorboard-tab-check: oxprof serve (pid {serving[0]}) outlived TensorBoard", file=sys.stderr)
            os.kill(serving[0], signal.SIGKILL)
            return 1
        print("tensorboard-tab-check: passed (TensorBoard stopped, its oxprof serve too)")
        return 0
    finally:
        if board is not None and board.poll() is None:
            board.kill()
            board.wait(timeout=30)
        for pid in servers_of(work / "logs"):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
