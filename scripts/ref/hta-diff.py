"""Records HTA's TraceDiff (PyPI `traceinsight` 0.6.1, module `hta`) on pairs of PyTorch
traces as golden files for oxprof diff's parity test
(crates/oxprof-api/tests/diff_hta.rs). Run by scripts/ref/hta-diff.sh, which builds the
venv; not by hand.

For each pair, TraceDiff.compare_traces (every iteration of each side, DeviceType.GPU and
DeviceType.CPU) and TraceDiff.ops_diff (added/deleted/increased/decreased/unchanged) are
written as one JSON file: per device type, one row per op name with HTA's counts and total
durations (µs) of control (A) and test (B), and the ops_diff lists.

    python scripts/ref/hta-diff.py OUT_DIR NAME CONTROL_DIR CONTROL_RANK TEST_DIR TEST_RANK
"""

import json
import os
import sys

from hta.trace_diff import DeviceType, LabeledTrace, TraceDiff


def labeled(trace_dir, label, cache):
    # Parse a directory once: rank 0 against rank 1 of one run shares its Trace.
    if trace_dir not in cache:
        cache[trace_dir] = LabeledTrace(label=label, trace_dir=trace_dir)
        return cache[trace_dir]
    return LabeledTrace(label=label, t=cache[trace_dir].t)


def main():
    out_dir, name, control_dir, control_rank, test_dir, test_rank = sys.argv[1:7]
    control_rank, test_rank = int(control_rank), int(test_rank)
    cache = {}
    control = labeled(os.path.abspath(control_dir), "control", cache)
    test = labeled(os.path.abspath(test_dir), "test", cache)
    sides = dict(
        control_rank=control_rank,
        test_rank=test_rank,
        control_iteration=control.iterations(),
        test_iteration=test.iterations(),
    )
    result = {
        "reference": "HTA TraceDiff (PyPI traceinsight 0.6.1), compare_traces and ops_diff, every iteration",
        "control": {"dir": control_dir, "rank": control_rank, "iterations": control.iterations()},
        "test": {"dir": test_dir, "rank": test_rank, "iterations": test.iterations()},
        "device_types": {},
    }
    for device in (DeviceType.GPU, DeviceType.CPU):
        df = TraceDiff.compare_traces(control, test, device_type=device, **sides)
        rows = [
            {
                "name": str(op),
                "control_counts": float(r["control_counts"]),
                "control_total_duration_us": float(r["control_total_duration"]),
                "test_counts": float(r["test_counts"]),
                "test_total_duration_us": float(r["test_total_duration"]),
                "counts_change": r["counts_change_categories"],
            }
            for op, r in df.sort_index().iterrows()
        ]
        ops = TraceDiff.ops_diff(control, test, device_type=device, **sides)
        result["device_types"][device.name] = {
            "rows": rows,
            "ops_diff": {k: sorted(str(x) for x in v) for k, v in ops.items()},
        }
    path = os.path.join(out_dir, f"{name}.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {path}: " + ", ".join(f"{k} {len(v['rows'])} ops" for k, v in result["device_types"].items()))


if __name__ == "__main__":
    main()
