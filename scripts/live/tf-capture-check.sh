#!/usr/bin/env bash
# Opt-in check (not run by CI: TensorFlow is a ~600 MB install): captures a real
# TensorFlow training loop with `oxprof capture` and checks the overview shows its steps.
#   TF_PYTHON=/path/to/python   a python with tensorflow(-cpu) installed; without it a venv
#                               is made at $OXPROF_TF_VENV (default <repo>/.venv-tf) with
#                               tensorflow-cpu==$TF_VERSION from PyPI.
#   OXPROF=/path/to/oxprof      the binary (default: cargo build --release -p oxprof).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
TF_VERSION="${TF_VERSION:-2.21.0}"

if [ -z "${TF_PYTHON:-}" ]; then
  VENV="${OXPROF_TF_VENV:-$PWD/.venv-tf}"
  if ! [ -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import tensorflow" 2>/dev/null; then
    echo "tf-check: creating $VENV with tensorflow-cpu==$TF_VERSION"
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "tensorflow-cpu==$TF_VERSION"
  fi
  TF_PYTHON="$VENV/bin/python"
fi
if [ -z "${OXPROF:-}" ]; then
  cargo build --release --quiet -p oxprof
  OXPROF="${CARGO_TARGET_DIR:-target}/release/oxprof"
fi

PORT="${PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
WORK="$(mktemp -d)"
trap 'kill "$SERVER_PID" 2>/dev/null || true; rm -rf "$WORK"' EXIT
mkfifo "$WORK/stdin"
"$TF_PYTHON" scripts/live/tf-train-server.py --port "$PORT" < "$WORK/stdin" > "$WORK/server.log" 2>&1 &
SERVER_PID=$!
exec 3> "$WORK/stdin"  # hold the server's stdin open
for _ in $(seq 1 240); do
  grep -q READY "$WORK/server.log" && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log"; echo "tf-check: server died"; exit 1; }
  sleep 0.5
done
grep -q READY "$WORK/server.log" || { cat "$WORK/server.log"; echo "tf-check: server did not start"; exit 1; }

start=$(date +%s.%N)
"$OXPROF" capture "127.0.0.1:$PORT" --logdir "$WORK/logs" --duration 2s --session-id tf --json > "$WORK/report.json"
end=$(date +%s.%N)
echo "tf-check: capture of 2 s took $(python3 -c "print(round($end - $start, 2))") s"
python3 - "$WORK/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = r["captured"][0]
print(f"tf-check: {c['bytes']} bytes via {c['source']} -> {c['path']}")
PY
"$OXPROF" data overview_page "$WORK/logs" --run tf > "$WORK/overview.json"
python3 - "$WORK/overview.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
steps = [r["c"][0]["v"] for r in d[1]["rows"]]
assert len(steps) >= 10, steps
print(f"tf-check: overview shows {len(steps)} steps ({steps[0]} .. {steps[-1]}): ok")
PY
