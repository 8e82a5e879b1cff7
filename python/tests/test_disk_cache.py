"""The persistent analysis cache from Python: opened as the CLI opens it (same directory,
same entries), so that a second process answers from it, with equal results; off with
``persistent_cache=False``."""

from __future__ import annotations

import gzip
import json
import os
import pickle
import re
import subprocess
import sys
import urllib.request

import pandas.testing
import pytest

import oxprof
from conftest import REPO, fixture, run_cli

TOOLS = ["overview_page", "framework_op_stats", "op_profile"]

# One fresh process: opens the profile, asks for TOOLS, and pickles what it got.
ASK = """
import pickle, sys, oxprof
path, cache_dir, out = sys.argv[1:4]
profile = oxprof.open(path, cache_dir=cache_dir or None)
reports = {tool: profile.tool(tool) for tool in sys.argv[4:]}
answers = {tool: (r.xprof_body, r.json, r.tables) for tool, r in reports.items()}
with open(out, "wb") as f:
    pickle.dump({"info": profile.cache_info(), "answers": answers}, f)
"""


def ask_in_a_new_process(path, cache_dir, out, tools=TOOLS, env=None):
    args = [sys.executable, "-c", ASK, str(path), str(cache_dir or ""), str(out), *tools]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    with open(out, "rb") as f:
        return pickle.load(f)


def assert_same_answers(first, second):
    assert first.keys() == second.keys()
    for tool, (body, report, tables) in first.items():
        body2, report2, tables2 = second[tool]
        assert body == body2, tool
        assert report == report2, tool
        assert tables.keys() == tables2.keys(), tool
        for name, frame in tables.items():
            pandas.testing.assert_frame_equal(frame, tables2[name], check_exact=True)
            assert frame.attrs == tables2[name].attrs


@pytest.mark.parametrize("name", ["jax_train", "tf_keras_fit"])
def test_a_second_process_answers_from_the_cache(tmp_path, name):
    cache_dir = tmp_path / "cache"
    first = ask_in_a_new_process(fixture(name), cache_dir, tmp_path / "first.pickle")
    second = ask_in_a_new_process(fixture(name), cache_dir, tmp_path / "second.pickle")
    # The first computed each host's analysis and stored it; the second read it back (and
    # so decoded nothing) and stored nothing.
    assert first["info"]["hits"] == 0 and first["info"]["written"] >= 1, first["info"]
    assert second["info"]["hits"] >= 1 and second["info"]["written"] == 0, second["info"]
    assert second["info"]["misses"] == 0 and second["info"]["rejected"] == 0, second["info"]
    assert first["info"]["dir"] == second["info"]["dir"] == os.path.join(cache_dir, "v1")
    assert_same_answers(first["answers"], second["answers"])
    # Computed afresh in this process, without the cache: the same answers again.
    profile = oxprof.open(fixture(name), persistent_cache=False)
    fresh = {tool: profile.tool(tool) for tool in TOOLS}
    assert_same_answers({t: (r.xprof_body, r.json, r.tables) for t, r in fresh.items()}, first["answers"])


def test_python_and_the_cli_share_the_cache(oxprof_bin, tmp_path):
    cache_dir = tmp_path / "cache"
    profile = oxprof.open(fixture("jax_train"), cache_dir=cache_dir)
    body = profile.tool("framework_op_stats").xprof_body
    info = profile.cache_info()
    assert info["written"] >= 1 and info["entries"] == info["written"], info
    # The CLI finds what Python wrote (and so writes nothing new)...
    cli = run_cli(oxprof_bin, "cache", "info", "--cache-dir", cache_dir).stdout
    assert cli.startswith(f"{info['dir']}: {info['entries']} entries"), cli
    done = subprocess.run(
        [oxprof_bin, "data", "framework_op_stats", fixture("jax_train"), "--cache-dir", cache_dir],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(body)
    # ...and Python what the CLI wrote: the CLI's entries are of the same files.
    other = tmp_path / "cli-cache"
    done = subprocess.run(
        [oxprof_bin, "data", "overview_page", fixture("tf_custom_loop"), "--cache-dir", other],
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    profile = oxprof.open(fixture("tf_custom_loop"), cache_dir=other)
    assert json.loads(profile.tool("overview_page").xprof_body) == json.loads(done.stdout)
    info = profile.cache_info()
    assert info["hits"] >= 1 and info["written"] == 0, info


def test_the_cache_can_be_turned_off(tmp_path):
    cache_dir = tmp_path / "cache"
    profile = oxprof.open(fixture("jax_train"), cache_dir=cache_dir, persistent_cache=False)
    profile.tool("overview_page")
    assert profile.cache_info() is None
    assert not cache_dir.exists()


def test_the_default_directory_is_the_clis(tmp_path):
    # $OXPROF_CACHE_DIR first, then the platform's cache directory ($XDG_CACHE_HOME/oxprof).
    env = {k: v for k, v in os.environ.items() if k not in ("OXPROF_CACHE_DIR", "XDG_CACHE_HOME")}
    named = tmp_path / "named"
    got = ask_in_a_new_process(
        fixture("jax_train"), None, tmp_path / "a.pickle", ["overview_page"], {**env, "OXPROF_CACHE_DIR": str(named)}
    )
    assert got["info"]["dir"] == os.path.join(named, "v1") and got["info"]["written"] >= 1
    xdg = tmp_path / "xdg"
    got = ask_in_a_new_process(
        fixture("jax_train"), None, tmp_path / "b.pickle", ["overview_page"], {**env, "XDG_CACHE_HOME": str(xdg)}
    )
    assert got["info"]["dir"] == os.path.join(xdg, "oxprof", "v1") and got["info"]["written"] >= 1


def test_a_cache_that_cannot_be_opened_is_a_warning(tmp_path):
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    with pytest.warns(oxprof.OxprofWarning, match="cannot write the analysis cache"):
        profile = oxprof.open(fixture("jax_train"), cache_dir=not_a_directory)
    assert profile.cache_info() is None
    assert profile.tool("overview_page").tables  # answers are unaffected


def test_diff_and_serve_use_the_cache(tmp_path):
    pairs = REPO / "testdata" / "diff"
    slow, fast = pairs / "slow_b32", pairs / "fast_b32"
    cache_dir = tmp_path / "cache"
    first = oxprof.diff(slow, fast, cache_dir=cache_dir)
    assert oxprof.diff(slow, fast, cache_dir=cache_dir).json == first.json
    assert oxprof.diff(slow, fast, persistent_cache=False).json == first.json
    # The diff stored each side's analysis: opening a side finds it.
    profile = oxprof.open(fast, cache_dir=cache_dir)
    profile.tool("framework_op_stats")
    assert profile.cache_info()["hits"] >= 1 and profile.cache_info()["written"] == 0

    served = tmp_path / "served"
    with oxprof.serve(fixture("jax_train"), cache_dir=served) as server:
        (run,) = oxprof.open(fixture("jax_train"), persistent_cache=False).runs
        url = f"{server.url}data/plugin/profile/data?run={run}&tag=framework_op_stats&host=vm"
        with urllib.request.urlopen(url, timeout=60) as response:
            body = json.load(response)
    profile = oxprof.open(fixture("jax_train"), cache_dir=served)
    assert json.loads(profile.tool("framework_op_stats", host="vm").xprof_body) == body
    assert profile.cache_info()["hits"] >= 1 and profile.cache_info()["written"] == 0


def test_a_directory_of_other_files_is_refused_and_left_as_it_was(tmp_path):
    home = tmp_path / "home"
    for folder, name in [("v1", "thesis.bin"), ("v2", "photo.jpg"), ("v10", "data.bin")]:
        (home / folder).mkdir(parents=True)
        (home / folder / name).write_text(f"{folder}'s own")
    (home / ".bashrc").write_text("export PATH")
    before = sorted((p.relative_to(home), p.read_bytes() if p.is_file() else None) for p in home.rglob("*"))
    with pytest.warns(oxprof.OxprofWarning, match="not oxprof's cache directory"):
        profile = oxprof.open(fixture("jax_train"), cache_dir=home)
    assert profile.cache_info() is None
    assert profile.tool("overview_page").tables  # answers are unaffected
    after = sorted((p.relative_to(home), p.read_bytes() if p.is_file() else None) for p in home.rglob("*"))
    assert after == before


def edit_the_middle_keeping_size_and_mtime(path):
    """Changes one digit of a CPU operator's duration past the middle of a Kineto trace, in
    place, and puts the modification time back."""
    data = path.read_bytes()
    start = data.index(b'"cat": "cpu_op"', len(data) // 2)
    digit = re.compile(rb'"dur": (\d)').search(data, start).start(1)
    assert 64 << 10 < digit < len(data) - (64 << 10)
    stat = path.stat()
    with open(path, "r+b") as f:
        f.seek(digit)
        f.write(b"8" if data[digit : digit + 1] == b"9" else b"9")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)


def test_an_edit_in_the_middle_with_the_mtime_put_back_is_answered_anew(tmp_path):
    (source,) = (REPO / "testdata" / "kineto" / "train").glob("*.pt.trace.json.gz")
    doc = json.loads(gzip.decompress(source.read_bytes()))
    # The CPU operators in the middle of the file, more than 64 KiB from either end.
    events = doc["traceEvents"]
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    rest = [e for e in events if e.get("cat") != "cpu_op"]
    doc["traceEvents"] = rest[: len(rest) // 2] + ops + rest[len(rest) // 2 :]
    trace = tmp_path / "worker0.pt.trace.json"
    trace.write_text(json.dumps(doc, indent=1))
    cache_dir = tmp_path / "cache"
    warm = oxprof.open(trace, cache_dir=cache_dir)
    before = warm.tool("pytorch_op_stats").json
    edit_the_middle_keeping_size_and_mtime(trace)
    fresh = oxprof.open(trace, persistent_cache=False).tool("pytorch_op_stats").json
    assert fresh != before, "the edit changes the numbers"
    assert warm.tool("pytorch_op_stats").json == fresh, "the warm profile's memory"
    assert oxprof.open(trace, cache_dir=cache_dir).tool("pytorch_op_stats").json == fresh

