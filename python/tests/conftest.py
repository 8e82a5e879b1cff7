"""Shared helpers of the Python tests: the repository's fixtures and the `oxprof` command
installed with the wheel (these tests run against the installed wheel, never the tree)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(os.environ.get("OXPROF_REPO", Path(__file__).resolve().parents[2]))
PROFILES = REPO / "testdata" / "profiles"
FIXTURES = ["tf_keras_fit", "tf_custom_loop", "jax_train", "tf_memory", "tf_memory_nobfc"]


def fixture(name: str) -> Path:
    return PROFILES / name


@pytest.fixture(scope="session")
def oxprof_bin() -> str:
    from oxprof.__main__ import find_binary

    return find_binary()


def run_cli(binary: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs `oxprof ARGS`; with `check`, fails the test on a non-zero exit."""
    args = tuple(map(str, args))
    if args[:1] == ("data",):
        # The CLI computes afresh what Python's answers are compared with (a cache hit would
        # also skip the input budgets these tests exercise).
        args = (*args, "--no-cache")
    done = subprocess.run([binary, *args], capture_output=True, text=True, timeout=300)
    if check and done.returncode != 0:
        pytest.fail(f"oxprof {' '.join(map(str, args))} exited {done.returncode}: {done.stderr}")
    return done


def cli_json(binary: str, *args: str):
    return json.loads(run_cli(binary, *args).stdout)


def cli_error(binary: str, *args: str) -> str:
    """The one line the CLI prints for a failure, without its `oxprof: ` prefix."""
    done = run_cli(binary, *args, check=False)
    assert done.returncode == 2, (done.returncode, done.stderr)
    line = done.stderr.strip()
    assert line.startswith("oxprof: "), line
    return line[len("oxprof: ") :]


def documented_columns(lead: str) -> dict:
    """{column: dtype} of the python/README.md table that follows the line starting with
    `lead` (rows of `| column | dtype |`, two such pairs to a row, blank cells skipped)."""
    lines = (REPO / "python" / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(lead))
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            rows.append([cell.strip().strip("`") for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    columns = {}
    for cells in rows[2:]:  # after the header and the separator
        for column, dtype in zip(cells[0::3], cells[1::3]):
            if column:
                columns[column] = dtype
    return columns
