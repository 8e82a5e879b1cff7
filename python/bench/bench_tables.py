"""Benchmark (not a test): a large profile's tool tables as pandas DataFrames from Python,
against the `oxprof data` command of the same wheel. Each measurement is a fresh process;
runs are interleaved. Cold: without the persistent analysis cache (`--no-cache`,
`persistent_cache=False`); cached: from a cache directory the first run of each filled.

    python bench_tables.py PROFILE [RUNS] [TOOL...]   (default tool: framework_op_stats)

Prints, per tool and way, the best and median wall time and CPU time (user + system, all
threads; steadier than wall time on a shared machine) of:
  cli csv      `oxprof data TOOL PROFILE --format csv --no-cache` (the whole process)
  python       every table of oxprof.open(PROFILE, persistent_cache=False).tool(TOOL) as
               DataFrames, inside a Python process that has already imported pandas and
               pyarrow (as a notebook has), timed from before `import oxprof`
  python proc  that whole Python process, interpreter start and pandas import included
  cli cached, python cached   the same with the persistent cache (`--cache-dir DIR`,
               `cache_dir=DIR`), each from its own directory, filled before the runs
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
import time

from oxprof.__main__ import find_binary

SNIPPET = """
import time, pandas, pyarrow
t, cpu = time.perf_counter(), time.process_time()
import oxprof
tables = oxprof.open({path!r}, **{options!r}).tool({tool!r}).tables
print(time.perf_counter() - t, time.process_time() - cpu, sum(len(frame) for frame in tables.values()))
"""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wall(command) -> tuple[float, float, str]:
    """Wall and CPU seconds of a command, and its output."""
    start, cpu = time.perf_counter(), children_cpu()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, children_cpu() - cpu, done.stdout


def main() -> None:
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    tools = sys.argv[3:] or ["framework_op_stats"]
    binary = find_binary()
    with tempfile.TemporaryDirectory(prefix="oxprof-bench-") as scratch:
        for tool in tools:
            cli_cache, py_cache = f"{scratch}/{tool}-cli", f"{scratch}/{tool}-python"
            cold, cached = {"persistent_cache": False}, {"cache_dir": py_cache}

            def python(options):
                return [sys.executable, "-c", SNIPPET.format(path=path, tool=tool, options=options)]

            commands = {
                "cli csv": [binary, "data", tool, path, "--format", "csv", "--no-cache"],
                "cli cached": [binary, "data", tool, path, "--format", "csv", "--cache-dir", cli_cache],
            }
            # Fill each cache directory.
            wall(commands["cli cached"])
            wall(python(cached))
            ways = ["cli csv", "python", "python proc", "cli cached", "python cached"]
            times: dict[str, list[tuple[float, float]]] = {way: [] for way in ways}
            rows = None
            for _ in range(runs):
                for way in ("cli csv", "cli cached"):
                    times[way].append(wall(commands[way])[:2])
                for way, options in (("python", cold), ("python cached", cached)):
                    seconds, cpu, out = wall(python(options))
                    inner, inner_cpu, rows = out.split()
                    times[way].append((float(inner), float(inner_cpu)))
                    if way == "python":
                        times["python proc"].append((seconds, cpu))
            print(f"{path}: {tool}, {rows} table rows in all, {runs} runs each")
            print(f"  {'':13} {'wall best':>9} {'median':>7}   {'cpu best':>8} {'median':>7}")
            for way in ways:
                walls, cpus = [t[0] for t in times[way]], [t[1] for t in times[way]]
                print(
                    f"  {way:13} {min(walls):8.3f}s {statistics.median(walls):6.3f}s"
                    f"   {min(cpus):7.3f}s {statistics.median(cpus):6.3f}s"
                )

            def ratio(a, b, pick, index):
                return pick([t[index] for t in times[a]]) / pick([t[index] for t in times[b]])

            for a, b in (("python", "cli csv"), ("python cached", "cli cached")):
                print(
                    f"  {a} / {b}: wall best {ratio(a, b, min, 0):.2f}x, median "
                    f"{ratio(a, b, statistics.median, 0):.2f}x; cpu best {ratio(a, b, min, 1):.2f}x, "
                    f"median {ratio(a, b, statistics.median, 1):.2f}x"
                )


if __name__ == "__main__":
    main()
