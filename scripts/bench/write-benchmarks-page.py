#!/usr/bin/env python3
"""Writes docs/benchmarks.md from the benchmark results committed under docs/bench-results/
(one JSON file per benchmark: what it measured, when, on which machine, at which load).

    python3 scripts/bench/write-benchmarks-page.py            # rewrite docs/benchmarks.md
    python3 scripts/bench/write-benchmarks-page.py --check    # exit 1 if the page is stale
    python3 scripts/bench/write-benchmarks-page.py record NAME --title TITLE [--order N] \\
        -- scripts/bench/reopen.sh ARGS...

`record` runs a benchmark script (its output passes through), then writes
docs/bench-results/NAME.json with the date, this machine (CPU model, cores and RAM from
/proc), the load average before and after, the command and what it printed (Markdown tables
are kept as tables, other lines as text), and rewrites the page. Commit both.

A result file holds: "title" (the page's section heading), "order" (sections ascend),
"command", "date", "machine" ({"cpu", "cores", "ram_gib"} or {"note"}), "load", optional
"glance" ([what, figure] rows for the summary table), and either "body" (Markdown
paragraphs) or "output" (a recorded run's stdout); "levers" (scripts/bench/binary-size.sh's
rows, one per build configuration) are rendered as tables after the body. The trace viewer's
(trace-ui.json) holds "trace_ui" too: one entry per profile ({"profile", "load", "result": the
JSON object scripts/bench/trace-ui.mjs printed}), shown as a table against issue 41's targets.
The pod job's (pod-spark.json, scripts/bench/pod-spark.sh) holds "pod_spark": one row per host
count, one machine against the Spark cluster, shown as a table.
"""

import argparse
import datetime
import json
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "docs", "bench-results")
PAGE = os.path.join(ROOT, "docs", "benchmarks.md")
ME = "scripts/bench/write-benchmarks-page.py"

INTRO = """Each section is one benchmark's latest committed result: when it ran, on which machine,
at which load average (timings on the shared 2-core VM vary by ±30 % from one day to the
next), and the command that reproduces it. The dated journal of how the numbers got here is
[Performance history](performance-history.md). `scripts/README.md` lists every benchmark
script; `python3 {me} record NAME --title TITLE -- SCRIPT ARGS…`
runs one and records its result here."""


def machine():
    """This machine: CPU model, cores, RAM (from /proc; Linux)."""
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    ram_gib = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    ram_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "ram_gib": ram_gib}


def load_average():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def describe(m):
    if "note" in m:
        return m["note"]
    parts = [m.get("cpu") or "CPU model unknown", f"{m.get('cores')} cores"]
    if m.get("ram_gib"):
        parts.append(f"{m['ram_gib']} GiB RAM")
    return ", ".join(parts)


def anchor(title):
    """The anchor mdBook gives a heading."""
    return re.sub(r"[^a-z0-9 _-]", "", title.lower()).strip().replace(" ", "-")


def render_output(text):
    """A recorded run's stdout: Markdown tables as tables, other lines as a text block."""
    out, plain = [], []

    def flush():
        if plain:
            out.extend(["```text", *plain, "```", ""])
            plain.clear()

    table = []
    for line in text.splitlines():
        if line.startswith("|"):
            flush()
            table.append(line)
            continue
        if table:
            out.extend([*table, ""])
            table = []
        if line.strip():
            plain.append(line)
    if table:
        out.extend([*table, ""])
    flush()
    return out


# Issue 41's interaction-speed targets (ms): a zoom or pan frame's median, an area
# selection's tabs, the pivot of 1 M slices.
TRACE_UI_TARGETS = {"frame": 16, "tab": 300, "pivot": 1000}


def render_trace_ui(runs):
    """scripts/bench/trace-ui.mjs's objects (one per profile) as a table against the targets."""

    def num(x):
        return "–" if x is None else f"{x:,.0f}" if abs(x) >= 100 else f"{x:.1f}".rstrip("0").rstrip(".")

    def mark(x, limit):
        return "" if x is None else " ✓" if x <= limit else " ✗"

    t = TRACE_UI_TARGETS
    lines = [
        f"Targets: a zoom or pan frame ≤ {t['frame']} ms (median), an area selection's tabs ≤ {t['tab']} ms, "
        f"the pivot of 1 M slices ≤ {t['pivot'] / 1000:g} s (a pivot of more slices is marked against "
        f"{t['pivot'] / 1000:g} s per million: the server's aggregate is one scan). A frame is the drawing work of one animation frame "
        "(`frame_draw_ms`; the frame interval is the browser's, one vsync at best: 16.7 ms); a tab's time runs from "
        "the mouse-up or the tab's click until its table is shown (SQL's refinement of self times comes after: "
        "*refined*).",
        "",
        "| profile | events | pan: frame interval / draw p50 (ms) | W/S held: interval / draw p50 (ms) "
        "| ctrl+wheel zoom settled p50 (ms) | area tabs: slices / pivot / flows / counters (ms) "
        "| slices refined (ms) | pivot of all slices: slices, shown (ms) | load (before, after) |",
        "|---|---:|---|---|---:|---|---:|---|---|",
    ]
    for run in runs:
        r = run["result"]
        pan, keys = r.get("pan", {}), r.get("zoom_keys", {})
        area, pivot = r.get("area_selection", {}), r.get("pivot_all", {})
        wheel = r.get("interactions", {}).get("wheel_zoom_settle_ms", {})
        pan_draw = pan.get("frame_draw_ms", {}).get("p50")
        key_draw = keys.get("frame_draw_ms", {}).get("p50")
        tabs = [area.get(f"{tab}_ms") for tab in ("slices", "pivot", "flows", "counters")]
        pivot_ms = pivot.get("pivot_ms")
        lines.append(
            f"| {run['profile']} | {r.get('events', 0):,} "
            f"| {num(pan.get('frame_ms', {}).get('p50'))} / {num(pan_draw)}{mark(pan_draw, t['frame'])} "
            f"| {num(keys.get('frame_interval_ms', {}).get('p50'))} / {num(key_draw)}{mark(key_draw, t['frame'])} "
            f"| {num(wheel.get('p50'))} "
            f"| {' / '.join(num(x) for x in tabs)}{mark(max((x for x in tabs if x is not None), default=None), t['tab'])} "
            f"| {num(area.get('slices_refined_ms'))} "
            f"| {pivot.get('slices', 0):,}, {num(pivot_ms)}"
            f"{mark(pivot_ms, t['pivot'] * slices_m) if (slices_m := (pivot.get('slices') or 0) / 1e6) >= 1 else ''} "
            f"| {run['load']} |"
        )
    lines.append("")
    return lines


def render_pod_spark(result):
    """scripts/bench/pod-spark.sh's rows: one machine against oxprof.spark on the 2-worker cluster."""
    lines = [
        f"A generated pod (`scripts/gen/pod.sh`'s generator, {result['host_mb']:g} MB per host; the 16- and 64-host "
        "runs are the 256-host pod's first hosts), ALL_HOSTS `overview_page`, the host files on local disk for "
        "both. *One machine*: `oxprof data overview_page --host ALL_HOSTS RUN --no-cache`. *Spark*: "
        "`spark-submit python/oxprof/spark.py RUN OUT` on a standalone cluster on 127.0.0.1 (a master and two "
        "workers of 1 core each, `scripts/ci/spark-cluster.sh`), the whole spark-submit (JVM and executors "
        "started, plan, per-host partials, gather into OUT, the driver's `oxprof pod combine OUT`), then the "
        "answer from the pod result, `oxprof data overview_page --host ALL_HOSTS OUT --no-cache` (one read of "
        "its combine file). Both answers are checked byte-identical. Task peak RSS is the largest of the "
        "per-host `oxprof pod partial` processes (÷ its host file; the process's own floor, about 20 MB, "
        "included). Seconds are wall time; MB = 10⁶ bytes.",
        "",
        "| hosts | host files MB | one machine s | one machine peak RSS MB "
        "| Spark job s (plan / compute / gather) | task s: sum, max | task peak RSS MB (÷ file) "
        "| partials MB | answer from OUT s | its peak RSS MB | Spark job + answer s |",
        "|---:|---:|---:|---:|---|---|---|---:|---:|---:|---:|",
    ]
    for r in result["pod_spark"]:
        lines.append(
            f"| {r['hosts']} | {r['total_mb']:,.0f} | {r['one_machine_s']:.2f} | {r['one_machine_rss_mb']:,.0f} "
            f"| {r['job_s']:.1f} ({r['plan_s']:.2f} / {r['compute_s']:.1f} / {r['gather_s']:.2f}) "
            f"| {r['task_s_sum']:.1f}, {r['task_s_max']:.2f} | {r['task_rss_max_mb']:.0f} ({r['task_rss_max_ratio']:.2f}×) "
            f"| {r['partials_mb']:.1f} | {r['combine_s']:.2f} | {r['combine_rss_mb']:.0f} | {r['cluster_s']:.1f} |"
        )
    lines.append("")
    return lines


def mb(n):
    return f"{n / 1e6:.1f}"


def render_levers(rows):
    """bench/binary-size.sh's rows: one configuration each (size, build time, analysis speed),
    then where the bytes go in the first and the last row with a breakdown, and where the
    last cold build's time went."""
    out = [
        "| configuration | stripped MB | `.text` MB | unwind MB | build CPU s | build wall | analyses (time new/old) | SQL (CPU new/old) | measured |",
        "|---|---:|---:|---:|---:|---|---|---|---|",
    ]
    for r in rows:
        sec = r.get("sections", {})
        unwind = sum(sec.get(k, 0) for k in (".eh_frame", ".eh_frame_hdr", ".gcc_except_table"))
        wall = f"{r['build_wall_s'] / 60:.1f} min (load {r['load']})" if r.get("cold_build") else "not cold"
        cpu = f"{r['build_cpu_s']:.0f}" if r.get("cold_build") else "–"
        if not r.get("cold_build") and r.get("build_note"):
            wall = r["build_note"]
        ratios = r.get("analysis_time_ratio")
        speed = ", ".join(f"{k} {v:.3f}" for k, v in ratios.items()) if ratios else "–"
        sql = r.get("sql_cpu_ratio")
        sql = ", ".join(f"{k} {v:.3f}" for k, v in sql.items()) if sql else "–"
        out.append(f"| **{r['label']}**: {r['config']} | {mb(r['stripped_bytes'])} | "
                   f"{mb(sec['.text']) if '.text' in sec else '–'} | {mb(unwind) if unwind else '–'} | {cpu} | "
                   f"{wall} | {speed} | {sql} | {r['date']}, {r.get('commit', '')} |")
    out.append("")
    first = rows[0]
    last = next((r for r in reversed(rows) if r.get("families")), first)
    if first.get("families") and first is not last:
        before = dict(first["families"])
        after = dict(last["families"])
        rest = "everything else"
        names = [n for n in after if n != rest] + [n for n in before if n not in after and n != rest] + [rest]
        out += [
            f"Where the code goes (`.text` symbols by the crate that asked for them,"
            f" bench/binary-size-breakdown.py), **{first['label']}** and **{last['label']}**:",
            "",
            f"| crates | {first['label']} MB | {last['label']} MB |",
            "|---|---:|---:|",
        ]
        for n in names:
            out.append(f"| {n} | {mb(before[n]) if n in before else 'with the rest'} |"
                       f" {mb(after[n]) if n in after else 'with the rest'} |")
        out.append("")
    timed = next((r for r in reversed(rows) if r.get("cold_build") and r.get("slowest_crates")), None)
    if timed:
        out += [
            f"Where the build's time goes in **{timed['label']}** (cargo `--timings`: wall seconds of"
            f" each crate's rustc, {timed.get('crate_seconds_total', '?')} s for all crates together):",
            "",
            "| crate | s |",
            "|---|---:|",
        ]
        out += [f"| {n} | {s} |" for n, s in timed["slowest_crates"]]
        out.append("")
    return out


def load_results():
    results = []
    for name in sorted(os.listdir(RESULTS)):
        if name.endswith(".json"):
            with open(os.path.join(RESULTS, name), encoding="utf-8") as f:
                result = json.load(f)
            result["_file"] = name
            results.append(result)
    results.sort(key=lambda r: (r.get("order", 1000), r["_file"]))
    return results


def page():
    results = load_results()
    lines = [
        f"<!-- Generated by {ME} from docs/bench-results/*.json: do not edit; record or edit a"
        " result and rerun the script. -->",
        "",
        "# Benchmarks",
        "",
        INTRO.format(me=ME),
        "",
        "## At a glance",
        "",
        "| what | figure | measured |",
        "|---|---|---|",
    ]
    for r in results:
        for what, figure in r.get("glance", []):
            lines.append(f"| {what} | {figure} | [{r['date']}](#{anchor(r['title'])}) |")
    lines.append("")
    for r in results:
        lines += [f"## {r['title']}", ""]
        lines += [
            f"*{r['date']}; {describe(r['machine'])}; load average {r['load']}; `{r['command']}`"
            f" ([result](bench-results/{r['_file']}))*",
            "",
        ]
        if "body" in r:
            for paragraph in r["body"]:
                lines += [paragraph, ""]
        if "trace_ui" in r:
            lines += render_trace_ui(r["trace_ui"])
        if "pod_spark" in r:
            lines += render_pod_spark(r)
        if "output" in r:
            lines += render_output(r["output"])
        if "levers" in r:
            lines += render_levers(r["levers"])
    return "\n".join(lines).rstrip("\n") + "\n"


def record(args):
    if not args.command:
        sys.exit("record: the benchmark command goes after --")
    before = load_average()
    started = datetime.datetime.now(datetime.timezone.utc)
    proc = subprocess.Popen(args.command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    captured = []
    for line in proc.stdout:
        sys.stdout.write(line)
        captured.append(line)
    status = proc.wait()
    if status != 0:
        sys.exit(f"record: {' '.join(args.command)} exited with {status}; nothing recorded")
    path = os.path.join(RESULTS, f"{args.name}.json")
    previous = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            previous = json.load(f)
    result = {
        "title": args.title or previous.get("title") or args.name,
        "order": args.order if args.order is not None else previous.get("order", 1000),
        "command": shlex.join(args.command),
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "load": f"{before} before, {load_average()} after",
        "output": "".join(captured),
    }
    if previous.get("glance"):
        # The summary rows are written by people from the numbers: keep them, marked stale.
        result["glance"] = [[what, f"{figure} (before {result['date']}: update)"]
                            for what, figure in previous["glance"]]
    os.makedirs(RESULTS, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(f"recorded {os.path.relpath(path, ROOT)}", file=sys.stderr)


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["record"]:
        command = []
        if "--" in argv:
            at = argv.index("--")
            argv, command = argv[:at], argv[at + 1:]
        parser = argparse.ArgumentParser(prog=f"{ME} record")
        parser.add_argument("name", help="the result's file name under docs/bench-results/, without .json")
        parser.add_argument("--title", help="the page's section heading")
        parser.add_argument("--order", type=int, help="where the section goes (ascending)")
        args = parser.parse_args(argv[1:])
        args.command = command
        record(args)
        argv = []
    parser = argparse.ArgumentParser(prog=ME, description="Writes docs/benchmarks.md from docs/bench-results/.")
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/benchmarks.md is not what this writes")
    args = parser.parse_args(argv)
    text = page()
    if args.check:
        with open(PAGE, encoding="utf-8") as f:
            if f.read() != text:
                sys.exit(f"docs/benchmarks.md is stale: run python3 {ME}")
        return
    with open(PAGE, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
