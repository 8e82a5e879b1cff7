#!/usr/bin/env python3
"""Writes a PyTorch (Kineto) trace in which every event has a name and an arg key of its
own: the worst case for string interning (issue #38 finding 9, #43's many-names trace).
A real trace repeats a few thousand names; this one has as many distinct names, and as
many distinct arg keys, as events (4 M of each at the default 384 MB), on four threads.

    python3 scripts/gen/many-names-trace.py OUT.json [SIZE_MB]   # default 384

`OUT.json.gz` is gzip'd if the name ends in .gz. Only the standard library; about 15 s
for the default size on this machine.
"""
import gzip
import sys


def main():
    out = sys.argv[1]
    size_mb = float(sys.argv[2]) if len(sys.argv) > 2 else 384.0
    target = int(size_mb * 1e6)
    opener = gzip.open if out.endswith(".gz") else open
    written = 0
    n = 0
    with opener(out, "wt") as f:
        head = '{"schemaVersion":1,"traceEvents":[\n'
        f.write(head)
        written += len(head)
        # ~96 bytes an event: one distinct name and one distinct arg key each.
        while written < target:
            chunk = []
            for _ in range(10_000):
                # 1 µs apart, 0.5 µs long: events of a thread never overlap.
                line = '{"ph":"X","name":"aten::op%07d","pid":1,"tid":%d,"ts":%d,"dur":0.5,"args":{"k%07d":%d}},\n' % (
                    n,
                    n % 4,
                    n,
                    n,
                    n & 0xFFFF,
                )
                chunk.append(line)
                n += 1
            text = "".join(chunk)
            f.write(text)
            written += len(text)
        tail = '{"ph":"X","name":"end","pid":1,"tid":0,"ts":%d,"dur":0.5}\n]}\n' % n
        f.write(tail)
    print("%s: %d events, %d distinct names and arg keys, %.0f MB" % (out, n + 1, n, written / 1e6), file=sys.stderr)


if __name__ == "__main__":
    main()
