"""Benchmark (not a test): a large profile's tool tables as pandas DataFrames from Python,
against the `oxprof data` command of the same wheel. Each measurement is a fresh process
(cold: nothing cached); runs are interleaved.

    python bench_tables.py PROFILE [RUNS] [TOOL...]   (default tool: framework_op_stats)

Prints, per tool and way, the best and median wall time and CPU time (user + system, all
threads; steadier than wall time on a shared machine) of:
  cli csv      `oxprof data TOOL PROFILE --format csv` (the whole process)
  cli json     the same with `--format json` (XProf's body, the CLI's default)
  python       every table of oxprof.open(PROFILE).tool(TOOL) as DataFrames, inside a
               Python process that has already imported pandas and pyarrow (as a notebook
               has), timed from before `import oxprof`
  python proc  that whole Python process, interpreter start and pandas import included
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time

from oxprof.__main__ import find_binary

SNIPPET = """
import time, pandas, pyarrow
t, cpu = time.perf_counter(), time.process_time()
import oxprof
tables = oxprof.open({path!r}).tool({tool!r}).tables
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
    for tool in tools:
        ways = ["cli csv", "cli json", "python", "python proc"]
        times: dict[str, list[tuple[float, float]]] = {way: [] for way in ways}
        rows = None
        for _ in range(runs):
            times["cli csv"].append(wall([binary, "data", tool, path, "--format", "csv"])[:2])
            times["cli json"].append(wall([binary, "data", tool, path])[:2])
            seconds, cpu, out = wall([sys.executable, "-c", SNIPPET.format(path=path, tool=tool)])
            inner, inner_cpu, rows = out.split()
            times["python"].append((float(inner), float(inner_cpu)))
            times["python proc"].append((seconds, cpu))
        print(f"{path}: {tool}, {rows} table rows in all, {runs} cold runs each")
        print(f"  {'':12} {'wall best':>9} {'median':>7}   {'cpu best':>8} {'median':>7}")
        for way in ways:
            walls, cpus = [t[0] for t in times[way]], [t[1] for t in times[way]]
            print(
                f"  {way:12} {min(walls):8.3f}s {statistics.median(walls):6.3f}s"
                f"   {min(cpus):7.3f}s {statistics.median(cpus):6.3f}s"
            )

        def ratio(way, pick, index):
            return pick([t[index] for t in times[way]])

        print(
            "  python / cli csv: wall best {:.2f}x, median {:.2f}x; cpu best {:.2f}x, median {:.2f}x".format(
                ratio("python", min, 0) / ratio("cli csv", min, 0),
                ratio("python", statistics.median, 0) / ratio("cli csv", statistics.median, 0),
                ratio("python", min, 1) / ratio("cli csv", min, 1),
                ratio("python", statistics.median, 1) / ratio("cli csv", statistics.median, 1),
            )
        )

if __name__ == "__main__":
    main()
