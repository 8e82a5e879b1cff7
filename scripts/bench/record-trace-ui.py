#!/usr/bin/env python3
"""Records one row of the trace viewer's interaction benchmark (issue 41's targets) in
docs/bench-results/trace-ui.json: runs scripts/bench/trace-ui.mjs on one profile with the
given `oxprof` build, notes the load average before and after, replaces the row of the same
label (or appends it), sets the file's date and load, and rewrites docs/benchmarks.md.
The page's prose ("body", "glance") is written by people from the numbers.

    scripts/bench/record-trace-ui.py LABEL PROFILE [TRACE_UI_ARGS...]
      e.g. OXPROF_BIN=target/release/oxprof scripts/bench/record-trace-ui.py \\
             '50 M-event synthetic (scripts/gen/synthetic-trace.sh), `--cache-mb 2048`' \\
             bench-data/synthetic --cache-mb 2048

OXPROF_BIN (default target/release/oxprof) is the server; OXPROF_UI_DIR, if set, the UI
build it serves (trace-ui.mjs's header says more). `--no-pages` is always passed.
"""

import datetime
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULT = os.path.join(ROOT, "docs", "bench-results", "trace-ui.json")


def load_average():
    with open("/proc/loadavg", encoding="ascii") as f:
        return f.read().split()[0]


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    label, profile, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    before = load_average()
    run = subprocess.run(
        ["node", os.path.join(ROOT, "scripts", "bench", "trace-ui.mjs"), "--profile", profile, "--no-pages", *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        check=True,
    )
    after = load_average()
    result = json.loads(run.stdout)
    if isinstance(result, list):
        if len(result) != 1:
            print(f"record-trace-ui: expected one profile's result, got {len(result)}", file=sys.stderr)
            return 1
        result = result[0]
    with open(RESULT, encoding="utf-8") as f:
        page = json.load(f)
    row = {"profile": label, "load": f"{before}, {after}", "result": result}
    rows = page.setdefault("trace_ui", [])
    for i, old in enumerate(rows):
        if old["profile"] == label:
            rows[i] = row
            break
    else:
        rows.append(row)
    page["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    loads = sorted(float(x) for r in rows for x in r["load"].split(", "))
    page["load"] = f"{loads[0]:g}–{loads[-1]:g} (1-minute; each run's in the table)"
    with open(RESULT, "w", encoding="utf-8") as f:
        json.dump(page, f, indent=2, ensure_ascii=False)
        f.write("\n")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench", "write-benchmarks-page.py")], check=True)
    print(f"record-trace-ui: {label}: load {before} → {after}; wrote {os.path.relpath(RESULT, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
