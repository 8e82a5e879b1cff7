#!/usr/bin/env bash
# XProf itself opens PyTorch traces that oxprof converted: each committed PyTorch fixture
# (testdata/kineto) and, when present, third-party GPU traces are converted with
# `oxprof convert --to xspace`, then read with XProf 2.24.2's protobuf classes and
# converters (scripts/ref/xprof-opens-pytorch.py, the refkit venv). Checks that XProf's event
# counts per plane equal oxprof's, that its trace viewer returns every event, and that its
# tools produce output. Prints one line per trace; exits non-zero on a mismatch.
#
# Environment: OXPROF_REFKIT_VENV (default ~/.cache/oxprof-refkit/venv, made by the
# refkit's requirements-lock.txt), OXPROF_BIN (default target/release/oxprof).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
REFKIT="${OXPROF_REFKIT:-$ROOT/../shared/refkit}"
VENV="${OXPROF_REFKIT_VENV:-$HOME/.cache/oxprof-refkit/venv}"
BIN="${OXPROF_BIN:-$ROOT/target/release/oxprof}"
[[ -x "$VENV/bin/python" ]] || { echo "no refkit venv at $VENV (see $REFKIT/README.md)" >&2; exit 1; }
[[ -x "$BIN" ]] || cargo build --release --locked -p oxprof --manifest-path "$ROOT/Cargo.toml" >&2

traces=("$ROOT"/testdata/kineto/*/*.pt.trace.json.gz)
EXT="$ROOT/../shared/testdata/external"
for f in "$EXT/facebookresearch-HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz" \
  "$EXT/AMD-AGI-TraceLens/tests/traces/mi300/gaunernst_bert-small-uncased__1016001.json.gz" \
  "$EXT/pytorch-kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"; do
  [[ -f "$f" ]] && traces+=("$f")
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0
for trace in "${traces[@]}"; do
  x="$work/$(basename "$trace" | sed 's/\.json\(\.gz\)\{0,1\}$//; s/\./_/g').xplane.pb"
  "$BIN" convert "$trace" --to xspace "$x" 2>/dev/null
  ours="$("$BIN" inspect --json "$x" | python3 -c '
import json, sys
host = json.load(sys.stdin)["runs"][0]["hosts"][0]
print(json.dumps({p["name"]: p["events"] for p in host["planes"]}, sort_keys=True))')"
  theirs="$("$VENV/bin/python" "$ROOT/scripts/ref/xprof-opens-pytorch.py" "$x" "$REFKIT" 2>/dev/null)"
  verdict="$(python3 - "$ours" "$theirs" <<'PY'
import json, sys
ours, theirs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
problems = []
if theirs["planes"] != ours:
    problems.append(f"plane events: XProf {theirs['planes']} vs oxprof {ours}")
total = sum(ours.values())
tv = theirs.get("trace_viewer@") or {}
legacy = theirs.get("trace_viewer") or {}
note = ""
# XProf keeps absolute times as int64 picoseconds (epoch ns x 1000, wrapping): traces whose
# wrapped times are negative (e.g. June 2021's) come back empty from its streaming viewer,
# as its own XSpaces of those dates would. Its legacy viewer still shows them.
if tv.get("events", 0) < total:
    if legacy.get("events", 0) >= total:
        note = f" (XProf's trace_viewer@ returned {tv.get('events')}: its int64 ps timestamps wrap negative; legacy trace_viewer {legacy.get('events')})"
    else:
        problems.append(f"trace_viewer@ returned {tv.get('events')} and trace_viewer {legacy.get('events')} of {total} events")
for tool in ("kernel_stats", "framework_op_stats", "overview_page", "trace_viewer"):
    if theirs.get(tool) is None:
        problems.append(f"{tool}: no output")
print(("FAIL " + "; ".join(problems)) if problems else
      f"ok: {total} events; XProf trace_viewer@ {tv.get('events')} events, {tv.get('flows')} flow-bound; "
      f"kernel_stats rows {theirs['kernel_stats'].get('rows')}, framework_op_stats {theirs['framework_op_stats']}{note}")
PY
)"
  echo "$(basename "$trace"): $verdict"
  [[ "$verdict" == ok* ]] || status=1
done
exit "$status"
