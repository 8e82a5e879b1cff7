#!/usr/bin/env python3
"""Issue 42's serving check: `oxprof serve` on a pod result directory, each multi-host tool
for ALL_HOSTS cold (a fresh server process, no analysis cache) and then warm.

The pod result is made without Spark (the partials are what the executors would compute):
a generated pod (gen_pod, HOSTS x HOST_MB), `oxprof pod partial` per host (JOBS at a time),
then `oxprof pod combine`, as the Spark job's driver ends. For each tool a new
`oxprof serve POD --no-cache` answers `/data/plugin/profile/data?tag=TOOL&host=ALL_HOSTS`
once cold and once warm, timed from the request to the last byte; the server's peak RSS
(VmHWM) and the host list the UI's host picker reads (`/data/plugin/profile/hosts`) are
reported too. Prints Markdown tables (for `write-benchmarks-page.py record`).

    python3 scripts/bench/pod-serve.py --bin target/release/oxprof --gen-pod target/release/examples/gen_pod
        [--hosts 256] [--host-mb 4] [--jobs 2] [--data DIR]

The pod and its result are kept in DIR (default bench-data/pod-serve-HOSTSxHOST_MBmb) and
reused when complete.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse

TOOLS = ["overview_page", "input_pipeline_analyzer", "framework_op_stats", "pod_viewer", "megascale_stats"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def vm_hwm(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def timed_run(argv):
    """Runs ARGV; returns (seconds, peak RSS bytes from GNU time)."""
    with tempfile.NamedTemporaryFile("r") as out:
        started = time.monotonic()
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out.name, *argv], check=True,
                       stdout=subprocess.DEVNULL)
        return time.monotonic() - started, int(out.read().split()[-1]) * 1024


def make_pod_result(args, data):
    run_dir = os.path.join(data, "plugins", "profile", "2026_01_01_00_00_00")
    if not os.path.isdir(run_dir) or len(os.listdir(run_dir)) != args.hosts:
        if os.path.exists(data):
            sys.exit(f"pod-serve: {data} exists but is not a {args.hosts}-host pod; remove it or pass --data")
        print(f"pod-serve: generating {args.hosts} hosts x {args.host_mb} MB into {data}", file=sys.stderr)
        subprocess.run([args.gen_pod, data, "--hosts", str(args.hosts), "--host-mb", str(args.host_mb)],
                       check=True, stdout=subprocess.DEVNULL)
    pod = os.path.join(data, "pod-result")
    combined = os.path.join(pod, "ALL_HOSTS.oxcombined")
    facts = {"hosts": args.hosts, "host_files_mb": round(sum(
        os.path.getsize(os.path.join(run_dir, f)) for f in os.listdir(run_dir)) / 1e6, 1)}
    if not os.path.exists(combined):
        os.makedirs(pod, exist_ok=True)
        files = sorted(os.listdir(run_dir))

        def partial(name):
            host = name.split(".xplane.pb")[0]
            out = os.path.join(pod, host + ".oxpartial")
            if not os.path.exists(out):
                subprocess.run([args.bin, "pod", "partial", os.path.join(run_dir, name), "--out", out],
                               check=True, stdout=subprocess.DEVNULL)

        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(partial, files))
        facts["partials_s"] = round(time.monotonic() - started, 1)
        seconds, rss = timed_run([args.bin, "pod", "combine", pod])
        facts["combine_s"], facts["combine_rss_mb"] = round(seconds, 2), round(rss / 1e6, 1)
    partials = [f for f in os.listdir(pod) if f.endswith(".oxpartial")]
    facts["partials_mb"] = round(sum(os.path.getsize(os.path.join(pod, f)) for f in partials) / 1e6, 1)
    facts["combined_mb"] = round(os.path.getsize(combined) / 1e6, 1)
    return pod, facts


class Server:
    def __init__(self, binary, pod):
        self.log = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen([binary, "serve", pod, "--port", "0", "--quiet", "--no-cache"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.port = None
        end = time.time() + 30
        while self.port is None and time.time() < end:
            self.log.seek(0)
            for line in self.log:
                if " at http://127.0.0.1:" in line:
                    self.port = int(line.rsplit(":", 1)[1].strip().strip("/"))
            if self.proc.poll() is not None:
                self.log.seek(0)
                sys.exit("pod-serve: the server exited at start:\n" + self.log.read())
            time.sleep(0.02)
        if self.port is None:
            sys.exit("pod-serve: the server did not say its address")

    def get(self, path):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        started = time.monotonic()
        conn.request("GET", path, headers={"Host": f"127.0.0.1:{self.port}"})
        response = conn.getresponse()
        body = response.read()
        seconds = time.monotonic() - started
        conn.close()
        if response.status != 200:
            sys.exit(f"pod-serve: {path}: HTTP {response.status}: {body[:300]!r}")
        return seconds, body

    def stop(self):
        rss = vm_hwm(self.proc.pid)
        self.proc.terminate()
        self.proc.wait(timeout=30)
        return rss


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", required=True, help="the oxprof binary (a release build)")
    p.add_argument("--gen-pod", required=True, help="the gen_pod example (oxprof-testkit)")
    p.add_argument("--hosts", type=int, default=256)
    p.add_argument("--host-mb", type=float, default=4)
    p.add_argument("--jobs", type=int, default=2, help="oxprof pod partial processes at once")
    p.add_argument("--data", help="where the pod and its result are kept")
    args = p.parse_args()
    data = args.data or os.path.join(ROOT, "bench-data", f"pod-serve-{args.hosts}x{args.host_mb:g}mb")
    pod, facts = make_pod_result(args, data)

    rows = []
    combined = os.path.join(pod, "ALL_HOSTS.oxcombined")
    for tool in TOOLS:
        for source in ("combine file", "partials"):
            rows.append(serve_once(args, pod, tool, source, combined))

    print(f"A generated pod of {facts['hosts']} hosts ({facts['host_files_mb']:,.0f} MB of host files, "
          f"{args.host_mb:g} MB each); its pod result: {facts['partials_mb']:,.1f} MB of partials and a "
          f"{facts['combined_mb']:,.1f} MB combine file"
          + (f", made here in {facts['partials_s']:.0f} s ({args.jobs} `oxprof pod partial` at a time) and "
             f"{facts['combine_s']:.1f} s (`oxprof pod combine`, peak RSS {facts['combine_rss_mb']:.0f} MB)"
             if "partials_s" in facts else " (reused)")
          + ". Each tool: a fresh `oxprof serve POD --no-cache`, ALL_HOSTS asked twice (cold, warm), "
            "then the host list of the UI's host picker; seconds from the request to the last byte. "
            "*From*: the pod's combine file, or the partials folded (the combine file moved away).")
    print()
    print("| tool | from | cold s | warm s | body bytes | host list s (hosts) | server peak RSS MB |")
    print("|---|---|---:|---:|---:|---|---:|")
    for r in rows:
        print(f"| {r['tool']} | {r['from']} | {r['cold_s']:.3f} | {r['warm_s']:.3f} | {r['bytes']:,} "
              f"| {r['hosts_s']:.3f} ({r['hosts_listed']}) | {r['rss_mb']:.0f} |")
    print()
    print(json.dumps({"facts": facts, "rows": rows}), file=sys.stderr)
    return 0


def serve_once(args, pod, tool, source, combined):
    """One fresh server answering TOOL for ALL_HOSTS from SOURCE (the combine file, or the
    partials with the combine file moved aside meanwhile)."""
    aside = combined + ".aside"
    if source == "partials":
        os.rename(combined, aside)
    try:
        server = Server(args.bin, pod)
        runs = json.loads(server.get("/data/plugin/profile/runs")[1])
        run = runs[0] if isinstance(runs[0], str) else runs[0]["name"]
        query = urllib.parse.urlencode({"run": run, "tag": tool, "host": "ALL_HOSTS"})
        cold, body = server.get(f"/data/plugin/profile/data?{query}")
        warm, _ = server.get(f"/data/plugin/profile/data?{query}")
        hosts_s, hosts_body = server.get("/data/plugin/profile/hosts?" + urllib.parse.urlencode({"run": run, "tag": tool}))
        rss = server.stop()
    finally:
        if source == "partials":
            os.rename(aside, combined)
    return {"tool": tool, "from": source, "cold_s": cold, "warm_s": warm, "bytes": len(body), "rss_mb": rss / 1e6,
            "hosts_s": hosts_s, "hosts_listed": len(json.loads(hosts_body))}


if __name__ == "__main__":
    sys.exit(main())
