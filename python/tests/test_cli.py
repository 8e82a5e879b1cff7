"""The `oxprof` command installed by the wheel: the native binary itself (as ruff's and
uv's wheels install theirs), the same version as the module, serving the bundled demo."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request

import pytest

import oxprof
from conftest import fixture, run_cli


def assert_version_line(stdout):
    # "oxprof 0.1.0 (build <16 hex digits>)": the release, then the fingerprint of its sources.
    assert re.fullmatch(rf"oxprof {re.escape(oxprof.__version__)} \(build [0-9a-f]{{16}}\)", stdout.strip()), stdout


def test_the_command_is_the_native_binary_on_path(oxprof_bin):
    # Installed into the environment's scripts directory, not a Python launcher script.
    assert os.path.samefile(os.path.dirname(oxprof_bin), os.path.dirname(sys.executable))
    assert "site-packages" in oxprof.__file__  # the installed package, not the source tree
    with open(oxprof_bin, "rb") as f:
        assert f.read(4) == b"\x7fELF"
    assert_version_line(run_cli(oxprof_bin, "--version").stdout)


def test_python_dash_m_runs_the_same_command():
    done = subprocess.run([sys.executable, "-m", "oxprof", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert_version_line(done.stdout)


@pytest.mark.parametrize("logdir", [None, "jax_train"])
def test_serve_answers_and_stops_on_sigterm(oxprof_bin, logdir):
    path = [] if logdir is None else [str(fixture(logdir))]
    server = subprocess.Popen(
        [oxprof_bin, "serve", *path, "--port", "0", "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = server.stdout.readline()
        # "oxprof: serving <the bundled demo | PATH> at http://127.0.0.1:PORT/"
        assert " at http://127.0.0.1:" in line, line + server.stderr.read()
        url = line.split(" at ", 1)[1].strip()
        with urllib.request.urlopen(url + "oxprof/api/info", timeout=30) as response:
            info = json.load(response)
        assert info["demo"] is (logdir is None), info
        assert info["version"] == oxprof.__version__, info
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.headers["X-Frame-Options"] == "DENY"
            assert b"<html" in response.read().lower()
        with urllib.request.urlopen(url + "data/plugin/profile/runs", timeout=30) as response:
            runs = json.load(response)
        if logdir is None:
            assert len(runs) == 4  # the demo's four profiles (TF, JAX, MI300X GEMM, PyTorch A100 DDP)
        else:
            assert runs == oxprof.open(fixture(logdir)).runs
            query = f"data/plugin/profile/data?run={runs[0]}&tag=overview_page&host=vm"
            with urllib.request.urlopen(url + query, timeout=60) as response:
                assert json.load(response) == json.loads(oxprof.open(fixture(logdir)).tool("overview_page").xprof_body)
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=60)
        server.stdout.close()
        server.stderr.close()
    assert code == 0
