#!/usr/bin/env python3
"""Writes a large PyTorch (Kineto) trace by repeating a real trace's events: copy k gets
timestamps shifted by k trace spans and fresh ids (flow ids, correlation and External ids,
Python ids), so flows, launches and steps stay distinct, as a long capture would have them.
Events are written one per line in Kineto's layout (timestamps with three decimals).

    python3 scripts/gen/large-kineto-trace.py SOURCE.json[.gz] OUT.json SIZE_MB

Only the standard library; about 1 minute per GB on this machine.
"""
import gzip
import json
import sys
from decimal import Decimal

ID_ARGS = ("correlation", "External id", "external id", "Python id", "Python parent id", "Record function id", "Ev Idx")


def main():
    src, out, size_mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rt") as f:
        # Decimals: float µs timestamps of 16 digits would lose nanoseconds.
        doc = json.load(f, parse_float=Decimal)
    events = doc["traceEvents"]
    meta = [e for e in events if e.get("ph") == "M"]
    body = [e for e in events if e.get("ph") != "M" and "ts" in e and isinstance(e.get("pid"), int)]
    ns = lambda v: int(Decimal(v) * 1000)  # noqa: E731
    start = min(ns(e["ts"]) for e in body)
    end = max(ns(e["ts"]) + ns(e.get("dur", 0)) for e in body)
    span = end - start + 1_000_000
    max_id = 0
    for e in body:
        if isinstance(e.get("id"), int):
            max_id = max(max_id, e["id"])
        for k in ID_ARGS:
            v = (e.get("args") or {}).get(k)
            if isinstance(v, int):
                max_id = max(max_id, v)
    stride = max_id + 1
    header = {k: v for k, v in doc.items() if k != "traceEvents"}
    target = int(size_mb * 1e6)
    written = 0
    copies = 0
    with open(out, "w") as f:
        head = json.dumps(header, indent=2, default=float)[:-2]  # drop the closing "\n}"
        f.write(head + ',\n  "traceEvents": [\n')
        for e in meta:
            line = "  " + json.dumps(e, default=float) + ",\n"
            f.write(line)
        written = f.tell()
        first = True
        while written < target:
            shift = copies * span
            bump = copies * stride
            parts = []
            for e in body:
                c = dict(e)
                t = ns(e["ts"]) + shift
                c["ts"] = "@@TS@@"
                if isinstance(c.get("id"), int):
                    c["id"] = c["id"] + bump
                args = c.get("args")
                if args:
                    args = dict(args)
                    for k in ID_ARGS:
                        if isinstance(args.get(k), int) and args[k] > 0:
                            args[k] += bump
                    c["args"] = args
                name = c.get("name", "")
                if isinstance(name, str) and name.startswith("ProfilerStep#"):
                    c["name"] = "ProfilerStep#%d" % (copies * 1000 + int(name[13:] or 0))
                parts.append(json.dumps(c, default=float).replace('"@@TS@@"', "%d.%03d" % divmod(t, 1000)))
            chunk = ("" if first else ",\n") + ",\n".join("  " + p for p in parts)
            first = False
            f.write(chunk)
            written += len(chunk)
            copies += 1
        f.write('\n  ]\n}\n')
    print("%s: %d copies of %d events, %.0f MB" % (out, copies, len(body), written / 1e6), file=sys.stderr)


if __name__ == "__main__":
    main()
