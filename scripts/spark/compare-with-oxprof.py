#!/usr/bin/env python3
"""Checks the Spark pod script's results (CSV under OUT/_results) against `oxprof query`
running the same SQL (oxprof_spark.QUERIES) on one machine over the run directory."""
import argparse
import csv
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oxprof_spark import QUERIES  # noqa: E402


def close(a, b):
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)
    return abs(x - y) <= 1e-9 * max(abs(x), abs(y), 1.0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--oxprof", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--results", required=True)
    a = p.parse_args()
    failures = 0
    for name, sql in QUERIES.items():
        done = subprocess.run([a.oxprof, "query", sql, a.run, "--format", "json"], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"oxprof query {name}: {done.stderr.strip()}")
        want = [list(r.values()) for r in json.loads(done.stdout)]
        with open(os.path.join(a.results, f"{name}.csv"), newline="") as f:
            got = list(csv.reader(f))[1:]
        ok = len(want) == len(got) and all(len(w) == len(g) and all(close(x, y) for x, y in zip(w, g)) for w, g in zip(want, got))
        print(f"spark vs oxprof: {name}: {'same' if ok else 'DIFFERENT'} ({len(want)} rows)")
        if not ok:
            failures += 1
            for w, g in list(zip(want, got))[:5]:
                print(f"  oxprof {w}\n  spark  {g}")
    if failures:
        sys.exit(f"{failures} queries differ")


if __name__ == "__main__":
    main()
