"""Times switching between the PyTorch and HTA tools on one run through a release
`oxprof serve`: the first tool of the run is cold (the trace is read), every other tool's
first request should answer from the session. The same sequence in-process, without
sockets: `cargo run --release -p oxprof-api --example torch_switch -- TRACE`.

    python scripts/bench/torch-switch.py OXPROF_BIN TRACE [--cache-mb MB] [--tools t1,t2,...]

Prints one line per request (tool, seconds, response bytes) and the server's peak RSS.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

TOOLS = [
    "pytorch_overview", "pytorch_op_stats", "pytorch_kernel_stats", "pytorch_memory", "pytorch_modules",
    "hta_gpu_idle", "hta_distributed", "pytorch_overview", "hta_gpu_idle",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(base, path, **params):
    url = f"{base}/{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=3600) as r:
        return r.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("trace")
    ap.add_argument("--cache-mb", default="8192")
    ap.add_argument("--tools", default=",".join(TOOLS))
    a = ap.parse_args()
    with open("/proc/loadavg") as f:
        print(f"load average: {' '.join(f.read().split()[:3])}", flush=True)
    port = free_port()
    server = subprocess.Popen([a.bin, "serve", a.trace, "--port", str(port), "--quiet", "--cache-mb", a.cache_mb])
    base = f"http://127.0.0.1:{port}/data/plugin/profile"
    try:
        for _ in range(600):
            try:
                runs = json.loads(get(base, "runs"))
                break
            except OSError:
                time.sleep(0.1)
        run = runs[0]
        for tool in a.tools.split(","):
            hosts = json.loads(get(base, "hosts", run=run, tag=tool))
            host = hosts[0]["hostname"] if hosts else ""
            t = time.monotonic()
            try:
                body = get(base, "data", run=run, tag=tool, host=host)
                size = len(body)
            except Exception as e:  # noqa: BLE001 - report and go on
                size = f"error {e}"
            print(f"{tool:22s} {time.monotonic() - t:8.2f} s  {size}", flush=True)
        with open(f"/proc/{server.pid}/status") as f:
            hwm = next(line for line in f if line.startswith("VmHWM"))
        print(f"server peak RSS: {hwm.split(':')[1].strip()}", flush=True)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    sys.exit(main())
