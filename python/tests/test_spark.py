"""oxprof.spark's job mechanics (python/oxprof/spark.py), on Spark in local mode.

These tests run the job with a STAND-IN for the oxprof binary (fake_oxprof below: a tiny
Python script answering `pod plan` and `pod partial` with made-up partials), so they check
Spark's side only: one task per host, the peak RSS of each host's process, failures per host,
the pod directory and its manifest, what the job refuses. The real binary on a real
standalone cluster reading a bucket is scripts/ci/test-spark-pod.sh. Three tests start Spark;
the others fail before it starts or need none.

They need pyspark and Java (skipped without them); scripts/ci/test-spark-pod.sh runs them
in its venv: SPARK_TEST_MASTER=spark://... runs them on that cluster instead of local[2].
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SPARK_PY = REPO / "python" / "oxprof" / "spark.py"

pyspark = pytest.importorskip("pyspark")
if not shutil.which("java"):
    pytest.skip("Spark needs Java", allow_module_level=True)

sys.path.insert(0, str(SPARK_PY.parent))
import spark as job  # noqa: E402 (the module file itself, without the oxprof package)

FAKE_OXPROF = """\
#!{python}
# A STAND-IN for oxprof in these tests only: `pod plan DIR` lists DIR's *.xplane.pb (plus a
# host "ghost" whose file does not exist); `pod partial FILE --out OUT` writes b"partial of "
# + FILE's bytes, fails on a file starting with CORRUPT, holds 64 MB first for a file
# starting with BIG, sleeps for one starting with SLOW; `pod combine OUT` writes OUT's
# partials' names into OUT/ALL_HOSTS.oxcombined, or fails when FAKE_COMBINE_FAILS is set.
import json, os, sys, time
args = sys.argv[1:]
if args[:2] == ["pod", "plan"]:
    src = args[2]
    hosts = [{{"host": f[:-len(".xplane.pb")], "source": os.path.join(src, f), "bytes": os.path.getsize(os.path.join(src, f))}}
             for f in sorted(os.listdir(src)) if f.endswith(".xplane.pb")]
    hosts.append({{"host": "ghost", "source": os.path.join(src, "ghost.xplane.pb"), "bytes": 10}})
    print(json.dumps({{"run": "fake_run", "hosts": hosts}}))
elif args[:2] == ["pod", "partial"]:
    src, out = args[2], args[args.index("--out") + 1]
    try:
        data = open(src, "rb").read()
    except OSError as e:
        sys.exit(f"{{src}}: cannot read: {{e.strerror}}")
    if data.startswith(b"CORRUPT"):
        print("some progress line", file=sys.stderr)
        sys.exit(f"{{src}}: not an XSpace profile (corrupt protobuf)")
    if data.startswith(b"SLOW"):
        time.sleep(60)
    if data.startswith(b"BIG"):
        big = bytearray(64 << 20)
        big[::4096] = b"x" * len(big[::4096])
        time.sleep(0.2)
    with open(out, "xb") as f:
        f.write(b"partial of " + data)
elif args[:2] == ["pod", "combine"]:
    out = args[2]
    if os.environ.get("FAKE_COMBINE_FAILS"):
        sys.exit(f"{{out}}: cannot combine (the stand-in was told to fail)")
    parts = sorted(f for f in os.listdir(out) if f.endswith(".oxpartial"))
    with open(os.path.join(out, "ALL_HOSTS.oxcombined"), "xb") as f:
        f.write(("combined " + ",".join(parts)).encode())
else:
    sys.exit(f"fake oxprof: unexpected arguments {{args}}")
"""


@pytest.fixture(scope="module")
def fake_oxprof(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bin") / "oxprof"
    path.write_text(FAKE_OXPROF.format(python=sys.executable))
    path.chmod(0o755)
    return path


def make_run(root: Path, contents: dict[str, bytes]) -> Path:
    run = root / "run"
    run.mkdir()
    for host, data in contents.items():
        (run / f"{host}.xplane.pb").write_bytes(data)
    return run


def submit(*args, env=None) -> subprocess.CompletedProcess:
    """`python spark.py ARGS` as spark-submit would run the file: no oxprof package."""
    master = os.environ.get("SPARK_TEST_MASTER", "local[2]")
    environ = {**os.environ, "PYSPARK_PYTHON": sys.executable, **(env or {})}
    environ.pop("PYTHONPATH", None)
    return subprocess.run([sys.executable, str(SPARK_PY), *map(str, args), "--master", master],
                          capture_output=True, text=True, timeout=600, env=environ, cwd="/")


def test_every_host_partial_failures_named_and_the_others_kept(tmp_path, fake_oxprof):
    contents = {f"host-{i}": f"profile {i}".encode() for i in range(6)}
    contents["host-2"] = b"CORRUPT bytes"
    contents["host-4"] = b"BIG profile"
    contents["host-5"] = b"SLOW profile"
    run = make_run(tmp_path, contents)
    out = tmp_path / "pod"
    # Planned, then a host's file deleted: it fails in the job, as "ghost" (planned, never there) does.
    planned = subprocess.run([fake_oxprof, "pod", "plan", run, "--format", "json"], capture_output=True, check=True).stdout
    (tmp_path / "plan.json").write_bytes(planned)
    contents["host-1"] = b"deleted"
    (run / "host-1.xplane.pb").unlink()
    done = submit(run, out, "--oxprof", fake_oxprof, "--plan", tmp_path / "plan.json", "--format", "json",
                  "--gather-mb", "0.00003", "--host-timeout", "3")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["hosts"] == 3
    assert [f["host"] for f in summary["failed"]] == ["ghost", "host-1", "host-2", "host-5"]

    manifest = json.loads((out / "pod.json").read_text())
    assert manifest["format"] == "oxprof-pod" and manifest["version"] == 1
    assert manifest["source"] == str(run) and manifest["run"] == "fake_run"
    assert manifest["engine"]["kind"] == "spark"
    good = sorted(h for h in contents if h not in ("host-1", "host-2", "host-5"))
    assert [h["host"] for h in manifest["hosts"]] == good
    for entry in manifest["hosts"]:
        partial = (out / entry["partial"]).read_bytes()
        assert entry["partial"] == entry["host"] + ".oxpartial"
        assert partial == b"partial of " + contents[entry["host"]]
        assert entry["partial_bytes"] == len(partial)
        assert entry["source_bytes"] == len(contents[entry["host"]])
        assert entry["source"] == str(run / f"{entry['host']}.xplane.pb")
        assert entry["seconds"] >= 0
    # Each host's peak RSS is its own process's: only host-4's held 64 MB.
    rss = {h["host"]: h["peak_rss_bytes"] for h in manifest["hosts"]}
    assert rss["host-4"] >= 64 << 20
    assert all(0 < r < 64 << 20 for h, r in rss.items() if h != "host-4")
    failed = {f["host"]: f for f in manifest["failed"]}
    assert failed["host-2"]["error"] == f"{run}/host-2.xplane.pb: not an XSpace profile (corrupt protobuf)"
    assert failed["ghost"]["error"].startswith(f"{run}/ghost.xplane.pb: cannot read")
    assert failed["host-1"]["error"].startswith(f"{run}/host-1.xplane.pb: cannot read")
    assert failed["host-5"]["error"] == "killed after the 3 s time limit per host (--host-timeout)"
    # The driver's combine (on by default) ran last, over the partials the job wrote.
    assert summary["combine"]["ok"] and summary["combine"]["peak_rss_bytes"] > 0, summary["combine"]
    assert (out / "ALL_HOSTS.oxcombined").read_bytes() == ("combined " + ",".join(f"{h}.oxpartial" for h in good)).encode()
    assert sorted(os.listdir(out)) == sorted([f"{h}.oxpartial" for h in good] + ["pod.json", "ALL_HOSTS.oxcombined"])


def test_a_failed_combine_is_named_and_the_partials_kept(tmp_path, fake_oxprof):
    run = make_run(tmp_path, {"a": b"profile a", "b": b"profile b"})
    out = tmp_path / "pod"
    done = submit(run, out, "--oxprof", fake_oxprof, "--format", "json", "--combine", env={"FAKE_COMBINE_FAILS": "1"})
    assert done.returncode == 0, done.stderr
    combined = json.loads(done.stdout)["combine"]
    assert not combined["ok"] and combined["error"] == f"{out}: cannot combine (the stand-in was told to fail)"
    assert "the combine failed; ALL_HOSTS answers fold the partials instead" in done.stderr
    assert sorted(os.listdir(out)) == ["a.oxpartial", "b.oxpartial", "pod.json"]
    # With --no-combine: not run at all.
    out2 = tmp_path / "pod2"
    done = submit(run, out2, "--oxprof", fake_oxprof, "--format", "json", "--no-combine")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["combine"] is None
    assert "ALL_HOSTS.oxcombined" not in os.listdir(out2)


def test_no_host_succeeds_exit_1_with_the_manifest(tmp_path, fake_oxprof):
    run = make_run(tmp_path, {"a": b"CORRUPT"})
    out = tmp_path / "pod"
    done = submit(run, out, "--oxprof", fake_oxprof)
    assert done.returncode == 1, done.stderr
    manifest = json.loads((out / "pod.json").read_text())
    assert manifest["hosts"] == [] and [f["host"] for f in manifest["failed"]] == ["a", "ghost"]


def test_out_must_be_new_or_empty_and_is_left_alone(tmp_path, fake_oxprof):
    run = make_run(tmp_path, {"a": b"x"})
    out = tmp_path / "pod"
    out.mkdir()
    (out / "mine.txt").write_text("user data")
    done = submit(run, out, "--oxprof", fake_oxprof)
    assert done.returncode == 2
    assert "not empty" in done.stderr
    assert os.listdir(out) == ["mine.txt"] and (out / "mine.txt").read_text() == "user data"
    (tmp_path / "file").write_text("a file")
    done = submit(run, tmp_path / "file", "--oxprof", fake_oxprof)
    assert done.returncode == 2 and "not a directory" in done.stderr


def test_a_failed_plan_writes_nothing(tmp_path, fake_oxprof):
    out = tmp_path / "pod"
    done = submit(tmp_path / "no-such-run", out, "--oxprof", fake_oxprof)
    assert done.returncode == 2
    assert "No such file" in done.stderr
    assert not out.exists()
    done = submit(tmp_path, out, "--oxprof", fake_oxprof, "--plan", tmp_path / "no-plan.json")
    assert done.returncode == 2 and "no-plan.json: No such file" in done.stderr
    (tmp_path / "plan.json").write_text('{"run": "r", "hosts": [{"host": "a"}]}')
    done = submit(tmp_path, out, "--oxprof", fake_oxprof, "--plan", tmp_path / "plan.json")
    assert done.returncode == 2 and "unexpected output ('source')" in done.stderr
    assert not out.exists()


# --- without Spark (no JVM) ------------------------------------------------------------------


def test_summary_is_one_line_naming_the_failed_hosts():
    result = {"hosts": [{"host": "a", "peak_rss_bytes": 3_000_000}],
              "failed": [{"host": "b", "error": "b.xplane.pb: corrupt"}, {"host": "c", "error": "c.xplane.pb: not found"}]}
    assert job.summary_line(result, "pod", 12.34) == (
        "oxprof.spark: 1 of 3 hosts in pod (12.3 s, peak RSS per host up to 3.0 MB); "
        "2 failed: b: b.xplane.pb: corrupt; c: c.xplane.pb: not found")


# --- ---------------------------------------------------------------------------


def test_run_measured_is_the_child_peak_not_the_parent(tmp_path):
    code, stderr, seconds, rss = job.run_measured(
        [sys.executable, "-c", "import sys, time; b = bytearray(48 << 20); b[::4096] = b'x' * len(b[::4096]); "
                               "time.sleep(0.2); print('why', file=sys.stderr); sys.exit(3)"])
    assert code == 3 and stderr.strip() == "why" and rss >= 48 << 20 and seconds > 0
    # This process holding 200 MB does not count towards a small child's peak (wait4's
    # ru_maxrss would: Linux keeps the forked copy's high-water mark across exec).
    held = bytearray(200 << 20)
    held[::4096] = b"x" * len(held[::4096])
    code, _, _, rss = job.run_measured(["sleep", "0.2"])
    assert code == 0 and 0 < rss < 50 << 20, rss
    del held


def test_error_line():
    assert job.error_line(2, "progress\nf: corrupt\n\n") == "f: corrupt"
    assert job.error_line(1, "") == "exit status 1, nothing on stderr"
    assert job.error_line(-9, "", timeout_s=5) == "killed after the 5 s time limit per host (--host-timeout)"
    assert job.error_line(-11, "x") == "killed by SIGSEGV: x"


def test_gather_batches_hold_at_most_the_limit_or_one_partial():
    assert list(job.gather_batches([10, 10, 10, 0, 25, 5], 20)) == [[0, 1], [2, 3], [4], [5]]
    assert list(job.gather_batches([], 20)) == []


def test_host_names_that_cannot_name_a_file():
    assert job.safe_file_name("tpu-pod-host-001")
    for bad in ("", ".", "..", ".hidden", "a/b", "../x", "a\\b", "a\0b"):
        assert not job.safe_file_name(bad)


def test_forwarded_env_is_the_object_store_settings_only():
    env = {"AWS_ACCESS_KEY_ID": "k", "GOOGLE_SERVICE_ACCOUNT": "f", "AZURE_STORAGE_USE_EMULATOR": "true",
           "OXPROF_OBJSTORE_CHUNK_MB": "8", "HOME": "/root", "PATH": "/bin"}
    assert job.forwarded_env(env) == {k: v for k, v in env.items() if k not in ("HOME", "PATH")}


def test_pod_directory_removes_only_what_it_wrote(tmp_path):
    out = tmp_path / "pod"
    pod = job.PodDirectory(out)
    pod.write_new("a.oxpartial", b"1")
    with pytest.raises(FileExistsError):
        pod.write_new("a.oxpartial", b"2")
    assert (out / "a.oxpartial").read_bytes() == b"1"
    (out / "theirs").write_text("not the job's")
    pod.remove_written()
    assert os.listdir(out) == ["theirs"]
