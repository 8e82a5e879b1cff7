#!/usr/bin/env python3
"""Counts the events of Chrome/Kineto JSON traces the plain way (Python's json module), for
the importer's real-data test (crates/oxprof-kineto/tests/external.rs).

    python3 scripts/dev/count-trace-events.py [EXTERNAL_DIR] > testdata/external-counts/kineto.json

What counts as one event (the importer's rule, stated independently of it):
  * every trace event with a timestamp whose phase is not M (metadata), E (ends a B),
    s/t/f (flow endpoints, which become stats of the events they bind to);
  * except C (counters): one event per numeric series in its args.
Per file it also counts flows (s/t/f) and devices (distinct args.device of GPU activity).
"""
import gzip
import json
import os
import sys

GPU_CATS = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset", "gpu_user_annotation"}


def count(events):
    n = flows = 0
    phases = {}
    for e in events:
        if not isinstance(e, dict):
            continue
        ph = e.get("ph")
        if ph is None or e.get("ts") is None:
            continue
        phases[ph] = phases.get(ph, 0) + 1
        if ph in ("s", "t", "f"):
            flows += 1
        elif ph in ("M", "E"):
            pass
        elif ph == "C":
            args = e.get("args") or {}
            n += sum(1 for v in args.values() if isinstance(v, (int, float)) and not isinstance(v, bool))
        else:
            n += 1
    return n, flows, phases


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "testdata", "external")
    root = os.path.abspath(root)
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not (f.endswith(".json") or f.endswith(".json.gz")):
                continue
            path = os.path.join(dirpath, f)
            opener = gzip.open if f.endswith(".gz") else open
            try:
                with opener(path, "rt") as fh:
                    doc = json.load(fh)
            except (ValueError, OSError):
                continue
            events = doc if isinstance(doc, list) else doc.get("traceEvents") if isinstance(doc, dict) else None
            # Only traces: other JSON files (manifests, tool outputs) have no events with a phase.
            if not isinstance(events, list) or not any(isinstance(e, dict) and "ph" in e for e in events):
                continue
            n, flows, phases = count(events)
            rel = os.path.relpath(path, root)
            out[rel] = {"events": n, "flows": flows, "phases": dict(sorted(phases.items()))}
    json.dump(dict(sorted(out.items())), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
