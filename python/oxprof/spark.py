"""``oxprof.spark``: a pod's per-host partial results computed by Spark executors.

The driver asks ``oxprof pod plan SOURCE`` for the run's hosts (a local directory, NFS or a
bucket: s3://, gs://, az://), runs one Spark task per host, in which the executor runs
``oxprof pod partial HOST_FILE`` and measures that process's peak RSS, and writes what comes
back into a *pod result directory*: ``<host>.oxpartial`` per host and the manifest
``pod.json``. The driver then runs ``oxprof pod combine OUT``, which writes the pod's own
ALL_HOSTS combine (``ALL_HOSTS.oxcombined``), what an ALL_HOSTS answer reads in one go
(``--no-combine`` leaves it out: the answers then fold the partials).
``oxprof data TOOL --host ALL_HOSTS OUT`` and ``oxprof serve OUT`` answer the multi-host
tools from it (docs/pods.md).

::

    spark-submit --master spark://127.0.0.1:7077 python/oxprof/spark.py s3://bucket/logs/run OUT \\
        --oxprof /path/to/oxprof
    python -m oxprof.spark s3://bucket/logs/run OUT --master spark://127.0.0.1:7077   # wheel installed

A host whose file is missing or corrupt is listed under ``failed`` with its error and never
loses the others; the job exits 0 when at least one host's partial is in OUT. OUT must be new
or empty; the job writes only files it creates there (and removes them again if the job
itself fails).

Only the standard library and pyspark are imported at module level, so ``spark-submit``
runs this file as it is, without the oxprof package or its native extension.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

MANIFEST = "pod.json"
PARTIAL_SUFFIX = ".oxpartial"
# Object-store credentials and settings the oxprof binary reads from its environment
# (oxprof-objstore): forwarded to the executors, which may have been started without them.
FORWARDED_ENV_PREFIXES = ("AWS_", "GOOGLE_", "AZURE_", "OXPROF_")
# How many bytes of partials the driver fetches from the executors at once (or one partial,
# when that is larger): what it holds in memory while writing them out.
DEFAULT_GATHER_MB = 256
EXIT_NO_HOST = 1
EXIT_USAGE = 2


class PodJobError(Exception):
    """The job cannot run at all (bad arguments, OUT not empty, the plan failed)."""


# --- on an executor -------------------------------------------------------------------------


def run_measured(argv, timeout_s=None, env=None, sample_s=0.005):
    """Runs ARGV to completion; returns (exit code, stderr text, seconds, peak RSS in bytes).

    The peak RSS is the child's own: the high-water mark of its address space (``VmHWM`` in
    /proc/PID/status), read every SAMPLE_S while it runs; the last reading is at most
    SAMPLE_S before its exit. ``wait4``'s ``ru_maxrss`` would not do: Linux carries a
    process's high-water mark across ``exec``, so a child forked from this Python worker
    (tens of MB) would report at least the worker's size whatever it used itself. Where
    /proc is missing (not Linux), ``ru_maxrss`` it is. A negative exit code is the signal
    that ended the child (as ``subprocess`` reports it).
    """
    started = time.monotonic()
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
        deadline = started + timeout_s if timeout_s else None
        peak = None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            hwm = vm_hwm(proc.pid)
            if hwm is not None:
                peak = max(peak or 0, hwm)
            if deadline and time.monotonic() > deadline:
                _kill(proc.pid)
                deadline = None
            time.sleep(sample_s)
        # Reaped here, so subprocess must not wait for it again.
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        stderr.seek(0)
        text = stderr.read(64 * 1024).decode("utf-8", "replace")
    if peak is None:
        peak = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return code, text, seconds, peak


def vm_hwm(pid):
    """PID's peak resident set size in bytes (Linux), None when unknown (no /proc, or exited)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def error_line(code, stderr, timeout_s=None):
    """The one line that says why a host failed: the binary's last line on stderr."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        if -code == signal.SIGKILL and timeout_s:
            return f"killed after the {timeout_s:g} s time limit per host (--host-timeout)"
        return f"killed by {name}" + (f": {lines[-1]}" if lines else "")
    return lines[-1] if lines else f"exit status {code}, nothing on stderr"


def compute_partial(host, binary, timeout_s=None, env=None):
    """One host's task: ``oxprof pod partial`` into a scratch file, read back.

    Returns a dict: host, source, ok, and either ``partial`` (its bytes) or ``error`` (one
    line), with ``seconds`` and ``peak_rss_bytes`` of the oxprof process either way.
    """
    child_env = dict(os.environ)
    child_env.update(env or {})
    scratch_root = (os.environ.get("SPARK_LOCAL_DIRS") or "").split(",")[0] or None
    scratch = tempfile.mkdtemp(prefix="oxprof-partial-", dir=scratch_root)
    try:
        out = os.path.join(scratch, "host" + PARTIAL_SUFFIX)
        argv = [binary, "pod", "partial", host["source"], "--out", out]
        try:
            code, stderr, seconds, rss = run_measured(argv, timeout_s, child_env)
        except OSError as e:
            return {**_identity(host), "ok": False, "error": f"cannot run {binary}: {e.strerror or e}",
                    "seconds": 0.0, "peak_rss_bytes": 0}
        result = {**_identity(host), "seconds": round(seconds, 3), "peak_rss_bytes": rss}
        if code != 0:
            return {**result, "ok": False, "error": error_line(code, stderr, timeout_s)}
        try:
            with open(out, "rb") as f:
                partial = f.read()
        except OSError as e:
            return {**result, "ok": False, "error": f"oxprof pod partial exited 0 but wrote no partial: {e}"}
        if not partial:
            return {**result, "ok": False, "error": "oxprof pod partial wrote an empty partial"}
        return {**result, "ok": True, "partial": partial}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _identity(host):
    return {"host": host["host"], "source": host["source"], "source_bytes": host.get("bytes")}


def executor_binary(name):
    """The oxprof binary on an executor: shipped with the job (SparkFiles), else NAME itself."""
    if os.path.isabs(name) and os.access(name, os.X_OK):
        return name
    from pyspark import SparkFiles

    shipped = SparkFiles.get(os.path.basename(name))
    if os.path.exists(shipped):
        if not os.access(shipped, os.X_OK):
            os.chmod(shipped, os.stat(shipped).st_mode | 0o111)
        return shipped
    return shutil.which(name) or name


def partition_task(binary, timeout_s, env):
    """The function each partition (one host) runs: yields that host's result."""

    def task(hosts):
        resolved = executor_binary(binary)
        for host in hosts:
            yield compute_partial(host, resolved, timeout_s, env)

    return task


# --- on the driver --------------------------------------------------------------------------


def find_oxprof(requested):
    """The driver's oxprof binary: --oxprof (a path or a name on PATH), else the wheel's."""
    if requested:
        if os.path.sep in requested or os.path.exists(requested):
            if not os.access(requested, os.X_OK):
                raise PodJobError(f"--oxprof {requested}: not an executable file")
            return os.path.abspath(requested)
        found = shutil.which(requested)
        if not found:
            raise PodJobError(f"--oxprof {requested}: not found on PATH")
        return found
    found = shutil.which("oxprof")
    if found:
        return found
    try:
        from oxprof.__main__ import find_binary
    except ImportError:
        raise PodJobError("no oxprof binary: install the oxprof wheel, put oxprof on PATH or pass --oxprof PATH") from None
    try:
        return find_binary()
    except FileNotFoundError as e:
        raise PodJobError(str(e)) from None


def plan(binary, source, plan_file=None):
    """``oxprof pod plan SOURCE --format json``, or what it printed into PLAN_FILE: the run and its hosts."""
    if plan_file:
        try:
            with open(plan_file, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise PodJobError(f"--plan {plan_file}: {e.strerror}") from None
        source = plan_file
    else:
        done = subprocess.run([binary, "pod", "plan", source, "--format", "json"], capture_output=True, text=True)
        if done.returncode != 0:
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            raise PodJobError(lines[-1] if lines else f"oxprof pod plan {source}: exit status {done.returncode}")
        text = done.stdout
    try:
        planned = json.loads(text)
        hosts = planned["hosts"]
        for host in hosts:
            host["host"], host["source"]  # noqa: B018 (both are required)
    except (ValueError, KeyError, TypeError) as e:
        raise PodJobError(f"oxprof pod plan {source}: unexpected output ({e}): {text[:200]!r}") from None
    if not hosts:
        raise PodJobError(f"{source}: oxprof pod plan found no host files")
    return planned


def safe_file_name(host):
    """Whether ``<host>.oxpartial`` is a plain file name in OUT (no path, no hidden file)."""
    return bool(host) and "/" not in host and "\\" not in host and "\0" not in host and not host.startswith(".")


class PodDirectory:
    """OUT, new or empty, and the files this job wrote there (the only ones it may remove)."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        self.written = []
        self.created_dir = not self.check_usable(path)
        if self.created_dir:
            os.makedirs(self.path)

    @staticmethod
    def check_usable(path):
        """Raises unless PATH is new or an empty directory; returns whether it exists."""
        if not os.path.lexists(path):
            return False
        if os.path.islink(path) or not os.path.isdir(path):
            raise PodJobError(f"{path}: exists and is not a directory; choose a new OUT")
        if os.listdir(path):
            raise PodJobError(f"{path}: not empty; choose a new or empty OUT (nothing there is overwritten)")
        return True

    def write_new(self, name, data):
        """Writes OUT/NAME, which must not exist (O_EXCL: never over another file)."""
        path = os.path.join(self.path, name)
        with open(path, "xb") as f:
            self.written.append(path)
            f.write(data)
        return len(data)

    def write_manifest(self, manifest):
        # Written last and whole (a new name, then linked in place), so a reader that finds
        # pod.json finds every partial it lists.
        data = (json.dumps(manifest, indent=1) + "\n").encode()
        staging = ".pod.json.partial"
        self.write_new(staging, data)
        os.link(os.path.join(self.path, staging), os.path.join(self.path, MANIFEST))
        self.written.append(os.path.join(self.path, MANIFEST))
        os.unlink(os.path.join(self.path, staging))
        self.written.remove(os.path.join(self.path, staging))

    def remove_written(self):
        """After a failed job: removes what it wrote (and OUT if it made it), nothing else."""
        for path in reversed(self.written):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        self.written.clear()
        if self.created_dir:
            try:
                os.rmdir(self.path)
            except OSError:
                pass


def forwarded_env(environ=None):
    environ = os.environ if environ is None else environ
    return {k: v for k, v in environ.items() if k.startswith(FORWARDED_ENV_PREFIXES)}


def spark_context(master, app_name="oxprof-pod"):
    """The SparkContext: --master, else spark-submit's, else local[*]."""
    from pyspark import SparkConf, SparkContext

    # The JVM first, so that the conf holds spark-submit's settings (its master, local[*]
    # unless told otherwise, also when pyspark starts the JVM itself).
    SparkContext._ensure_initialized()
    conf = SparkConf().setAppName(app_name)
    if master:
        conf.setMaster(master)
    # Tasks are whole hosts: never run the same host twice at once on purpose.
    conf.setIfMissing("spark.speculation", "false")
    if not sys.stderr.isatty():
        # The progress bar redraws one line with carriage returns: noise in a log file.
        conf.setIfMissing("spark.ui.showConsoleProgress", "false")
    sc = SparkContext.getOrCreate(conf)
    sc.setLogLevel("ERROR")
    return sc


def executor_count(sc):
    """Executors registered with the driver (the driver itself is not one, except in local mode)."""
    if sc.master.startswith("local"):
        return 1
    try:
        return max(sc._jsc.sc().getExecutorMemoryStatus().size() - 1, 0)
    except Exception:  # noqa: BLE001 (an internal API: the count is informative only)
        return None


def run_job(sc, planned, source, out, binary, *, ship=True, executor_oxprof=None, host_timeout=None,
            gather_mb=DEFAULT_GATHER_MB):
    """Computes every planned host's partial on the executors and writes OUT.

    PLANNED is what ``plan`` returned. Returns the manifest written to OUT/pod.json plus
    "timing" (not in the manifest).
    """
    from pyspark import StorageLevel

    if __name__ != "__main__":
        # Imported as oxprof.spark: the task functions go to the executors by value, so they
        # need neither the oxprof package nor its native extension.
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    pod = PodDirectory(out)
    try:
        hosts, failed = [], []
        for host in planned["hosts"]:
            if safe_file_name(host["host"]):
                hosts.append(host)
            else:
                failed.append({"host": host["host"], "source": host["source"],
                               "error": f"host name {host['host']!r} cannot name a file in {out}"})

        if executor_oxprof:
            task_binary = executor_oxprof
        elif ship:
            sc.addFile(binary)
            task_binary = os.path.basename(binary)
        else:
            task_binary = binary
        started = time.monotonic()
        results = sc.parallelize(hosts, max(len(hosts), 1)).mapPartitions(
            partition_task(task_binary, host_timeout, forwarded_env()))
        # Computed once, in parallel, and kept by the executors (on disk); the driver learns
        # only each partial's size (a partition is a host, in plan order) ...
        results.persist(StorageLevel.DISK_ONLY)
        sizes = results.map(lambda r: len(r["partial"]) if r["ok"] else 0).collect()
        compute_s = time.monotonic() - started
        # ... then fetches them in batches of at most GATHER_MB, writing each out as it comes.
        started = time.monotonic()
        entries = []
        for batch in gather_batches(sizes, gather_mb * 1_000_000):
            for result in fetch_cached(sc, results, batch):
                if result["ok"]:
                    name = result["host"] + PARTIAL_SUFFIX
                    size = pod.write_new(name, result["partial"])
                    entries.append({"host": result["host"], "source": result["source"], "partial": name,
                                    "source_bytes": result["source_bytes"], "partial_bytes": size,
                                    "seconds": result["seconds"], "peak_rss_bytes": result["peak_rss_bytes"]})
                else:
                    failed.append({"host": result["host"], "source": result["source"], "error": result["error"]})
        results.unpersist()
        gather_s = time.monotonic() - started
        entries.sort(key=lambda e: e["host"])
        failed.sort(key=lambda e: e["host"])
        manifest = {
            "format": "oxprof-pod",
            "version": 1,
            "source": source,
            "run": planned.get("run"),
            "engine": {"kind": "spark", "master": sc.master, "executors": executor_count(sc)},
            "hosts": entries,
            "failed": failed,
        }
        pod.write_manifest(manifest)
    except BaseException:
        pod.remove_written()
        raise
    return {**manifest, "timing": {"compute_seconds": round(compute_s, 3), "gather_seconds": round(gather_s, 3)}}


def fetch_cached(sc, rdd, partitions):
    """The rows of the cached RDD's PARTITIONS, read by the JVM from the executors' block
    stores as they are. ``sc.runJob`` would run a Python task per partition only to hand its
    rows back: on a 2-core machine, 17 s of the gather for 256 hosts."""
    from pyspark.rdd import _load_from_socket

    sock_info = sc._jvm.PythonRDD.runJob(sc._jsc.sc(), rdd._jrdd, partitions)
    return _load_from_socket(sock_info, rdd._jrdd_deserializer)


def gather_batches(sizes, limit):
    """Partition indices in order, grouped so that a group's sizes add up to at most LIMIT
    (a size over LIMIT is a group of its own)."""
    batch, held = [], 0
    for index, size in enumerate(sizes):
        if batch and held + size > limit:
            yield batch
            batch, held = [], 0
        batch.append(index)
        held += size
    if batch:
        yield batch


def combine(binary, out):
    """The driver's ``oxprof pod combine OUT``: returns {seconds, peak_rss_bytes, ok} and,
    when it failed, its one-line ``error`` (the pod result still answers without it: each
    ALL_HOSTS answer then folds the partials)."""
    try:
        code, stderr, seconds, rss = run_measured([binary, "pod", "combine", out])
    except OSError as e:
        return {"ok": False, "error": f"cannot run {binary}: {e.strerror or e}", "seconds": 0.0, "peak_rss_bytes": 0}
    result = {"ok": code == 0, "seconds": round(seconds, 3), "peak_rss_bytes": rss}
    if code != 0:
        result["error"] = error_line(code, stderr)
    return result


def summary_line(result, out, seconds):
    ok, failed = result["hosts"], result["failed"]
    line = f"oxprof.spark: {len(ok)} of {len(ok) + len(failed)} hosts in {out} ({seconds:.1f} s"
    if ok:
        line += f", peak RSS per host up to {max(h['peak_rss_bytes'] for h in ok) / 1e6:.1f} MB"
    line += ")"
    combined = result.get("combine")
    if combined and combined["ok"]:
        line += f"; combined in {combined['seconds']:.1f} s, peak RSS {combined['peak_rss_bytes'] / 1e6:.1f} MB"
    elif combined:
        line += f"; the combine failed (ALL_HOSTS answers fold the partials instead): {combined['error']}"
    if failed:
        line += f"; {len(failed)} failed: " + "; ".join(f"{f['host']}: {f['error']}" for f in failed)
    return line


def main(argv=None):
    p = argparse.ArgumentParser(prog="oxprof.spark", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", help="the run: a directory, a logdir or an object-store URL (s3://, gs://, az://)")
    p.add_argument("out", help="the pod result directory to write (new or empty)")
    p.add_argument("--oxprof", help="the oxprof binary on the driver, shipped to the executors "
                                    "(default: oxprof on PATH, else the wheel's)")
    p.add_argument("--executor-oxprof", metavar="PATH",
                   help="an oxprof binary already installed at PATH on every executor (not shipped)")
    p.add_argument("--plan", metavar="FILE",
                   help="the hosts from FILE, what `oxprof pod plan SOURCE --format json` printed, "
                        "instead of planning now")
    p.add_argument("--master", help="Spark master URL (default: spark-submit's, else local[*])")
    p.add_argument("--host-timeout", type=float, default=3600, metavar="SECONDS",
                   help="stop a host's oxprof after this long and count the host failed (default 3600)")
    p.add_argument("--gather-mb", type=float, default=DEFAULT_GATHER_MB, metavar="MB",
                   help=f"MB of partials the driver fetches at once (default {DEFAULT_GATHER_MB})")
    p.add_argument("--combine", action=argparse.BooleanOptionalAction, default=True,
                   help="end with the driver's `oxprof pod combine OUT` (ALL_HOSTS.oxcombined, what ALL_HOSTS "
                        "answers read in one go; on by default, --no-combine: the answers fold the partials)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="the summary on stdout")
    a = p.parse_args(argv)
    if a.gather_mb <= 0:
        p.error("--gather-mb must be positive")

    # Everything that can fail fast does so before Spark starts.
    started = time.monotonic()
    try:
        binary = find_oxprof(a.oxprof)
        PodDirectory.check_usable(a.out)
        planned = plan(binary, a.source, a.plan)
    except PodJobError as e:
        print(f"oxprof.spark: {e}", file=sys.stderr)
        return EXIT_USAGE
    plan_s = time.monotonic() - started
    sc = spark_context(a.master)
    try:
        result = run_job(sc, planned, a.source, a.out, binary, executor_oxprof=a.executor_oxprof,
                         host_timeout=a.host_timeout, gather_mb=a.gather_mb)
    finally:
        sc.stop()
    if result["hosts"] and a.combine:
        # On the driver, after Spark: it reads only the partials (and pod.json), one at a time.
        result["combine"] = combine(binary, a.out)
        if not result["combine"]["ok"]:
            print(f"oxprof.spark: the combine failed; ALL_HOSTS answers fold the partials instead: "
                  f"{result['combine']['error']}", file=sys.stderr)
    seconds = time.monotonic() - started
    if a.format == "json":
        print(json.dumps({
            "out": os.path.abspath(a.out), "run": result["run"], "engine": result["engine"],
            "hosts": len(result["hosts"]), "failed": result["failed"], "seconds": round(seconds, 3),
            "plan_seconds": round(plan_s, 3), **result["timing"],
            "max_peak_rss_bytes": max((h["peak_rss_bytes"] for h in result["hosts"]), default=0),
            "combine": result.get("combine"),
        }, indent=1))
    else:
        print(summary_line(result, a.out, seconds))
    return 0 if result["hosts"] else EXIT_NO_HOST


if __name__ == "__main__":
    sys.exit(main())
