#!/usr/bin/env python3
"""Load test of `oxprof serve` (issue #38): 64 clients for 60 s with tool requests, SQL
(ordinary and hostile) and runs on a hostile object store mixed in, the server under an
RSS watchdog with --cache-mb 64.

    scripts/ci/load-serve.py                          # target/release/oxprof, 64 clients, 60 s
    scripts/ci/load-serve.py --bin PATH --clients 64 --seconds 60 --cache-mb 64
    scripts/ci/load-serve.py --extra RUN=FILE ...     # more (larger) profiles in the logdir

The logdir is served over HTTP by scripts/ci/hostile-store.py (a WebDAV-style store on
loopback): the committed profiles (XSpace and PyTorch) beside runs whose object lies about
its length, sends an oversized 206, never ends or stalls. Each client loops over a random
mix of `/data` tool requests, `explain` (/oxprof/api/explain), trace-viewer windows, SQL
queries (finding 2's string blow-ups, a 2,500-term UNION ALL, a doubling CTE, a recursive
CTE, big GROUP BYs, next to ordinary ones) and requests on the hostile runs.

Passes (exit 0) when: the server never dies, no request goes unanswered past --hang-s
(hangs), no answer is a 5xx other than 503/504 (busy, timed out: named limits), peak RSS
stays within --cache-mb + 512 MB, and SIGTERM ends it with status 0. Prints one JSON
summary (requests, statuses, latencies, peak RSS, what 4xx/5xx answers said) and writes it
to --out if given.
Loopback only; everything stops by itself.
"""

import argparse
import collections
import glob
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from rss_watchdog import Watchdog  # noqa: E402

HOSTILE_RUNS = ["hostile_lying", "hostile_oversize", "hostile_endless", "hostile_stall"]

ORDINARY_SQL = [
    "SELECT name, count(*) AS n, sum(dur_ps) AS total FROM slice GROUP BY name ORDER BY total DESC LIMIT 20",
    "SELECT count(*) FROM slice",
    "SELECT * FROM op_stats ORDER BY total_self_time DESC LIMIT 50",
    "SELECT host, count(*), max(depth) FROM slice GROUP BY host",
    "SELECT s.name, count(*) FROM slice s JOIN slice p ON s.parent_id = p.id AND s.host = p.host GROUP BY 1 LIMIT 20",
]
HOSTILE_SQL = [
    "SELECT sum(length(lpad(CAST(value AS VARCHAR), 1000000000))) FROM range(8)",
    "SELECT length(repeat('x', 2147483647))",
    "SELECT 1" + " UNION ALL SELECT 1" * 2499,
    "WITH a0 AS (SELECT 1 AS x) "
    + "".join(f", a{i} AS (SELECT x FROM a{i-1} UNION ALL SELECT x FROM a{i-1})" for i in range(1, 40))
    + " SELECT count(*) FROM a39",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
    "SELECT value % 1000003 AS k, count(*) FROM range(100000000) GROUP BY k ORDER BY 2 DESC LIMIT 5",
    "SELECT string_agg(repeat('y', 100000), ',') FROM range(100000)",
]


def logdir_map(extra):
    """`logs/...=file` mappings for the committed profiles (and --extra ones)."""
    maps = []
    for path in sorted(glob.glob(os.path.join(ROOT, "testdata/profiles/*/plugins/profile/*/*.xplane.pb*"))
                       + glob.glob(os.path.join(ROOT, "testdata/profiles/*/*/plugins/profile/*/*.xplane.pb*"))):
        run = path.split("/testdata/profiles/")[1].split("/")[0]
        maps.append(f"logs/plugins/profile/{run}/{os.path.basename(path)}={path}")
    for path in glob.glob(os.path.join(ROOT, "testdata/demo/*/plugins/profile/*/*.xplane.pb*")):
        maps.append(f"logs/plugins/profile/demo_{os.path.basename(os.path.dirname(path))}/{os.path.basename(path)}={path}")
    for path in sorted(glob.glob(os.path.join(ROOT, "testdata/kineto/*/*.pt.trace.json.gz"))
                       + glob.glob(os.path.join(ROOT, "testdata/demo/*/*.pt.trace.json.gz"))):
        run = os.path.basename(os.path.dirname(path))
        maps.append(f"logs/{run}/{os.path.basename(path)}={path}")
    for e in extra:
        run, _, path = e.partition("=")
        kind = "plugins/profile/" if ".xplane.pb" in path else ""
        maps.append(f"logs/{kind}{run}/{os.path.basename(path)}={os.path.abspath(path)}")
    return maps


def wait_for(path, proc, seconds=30):
    end = time.time() + seconds
    while time.time() < end:
        if os.path.exists(path):
            with open(path) as f:
                text = f.read().strip()
            if text:
                return text
        if proc.poll() is not None:
            raise SystemExit(f"load-serve: {proc.args[0]} exited early ({proc.returncode})")
        time.sleep(0.05)
    raise SystemExit(f"load-serve: nothing in {path} after {seconds} s")


def request(port, path, timeout):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, len(body), body[:300]
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/oxprof"))
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--cache-mb", type=int, default=64)
    ap.add_argument("--hang-s", type=float, default=90, help="an answer later than this is a hang")
    ap.add_argument("--extra", action="append", default=[], help="RUN=FILE, another profile")
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--out")
    args = ap.parse_args()
    cap_mb = args.cache_mb + 512

    tmp = tempfile.mkdtemp(prefix="oxprof-load-")
    store_port_file = os.path.join(tmp, "store.port")
    store_cmd = [sys.executable, os.path.join(HERE, "hostile-store.py"), store_port_file, "--hostile",
                 "--seconds", str(args.seconds + args.hang_s + 120)]
    for m in logdir_map(args.extra):
        store_cmd += ["--map", m]
    store = subprocess.Popen(store_cmd)
    store_port = wait_for(store_port_file, store)
    logdir = f"http://127.0.0.1:{store_port}/logs/"

    server_log = open(os.path.join(tmp, "server.log"), "w+")
    server = subprocess.Popen([args.bin, "serve", logdir, "--port", "0", "--quiet", "--no-cache",
                               "--cache-mb", str(args.cache_mb)],
                              stdout=server_log, stderr=subprocess.STDOUT)
    dog = Watchdog(server.pid, cap_mb)
    end = time.time() + 30
    port = None
    while time.time() < end and port is None:
        server_log.seek(0)
        for line in server_log:
            if " at http://127.0.0.1:" in line:
                port = int(line.rsplit(":", 1)[1].strip().strip("/"))
        if server.poll() is not None:
            raise SystemExit("load-serve: the server exited at start:\n" + open(server_log.name).read())
        time.sleep(0.05)
    if port is None:
        raise SystemExit("load-serve: the server did not say its address")

    runs = json.loads(request_full(port, "/oxprof/api/runs"))["runs"]
    good = [r for r in runs if r["name"] not in HOSTILE_RUNS]
    tools_of = {}
    for r in good:
        tools = json.loads(request_full(port, "/run_tools?run=" + urllib.parse.quote(r["name"])))
        tools_of[r["name"]] = [t for t in tools if t not in ("graph_viewer", "memory_viewer")] or ["overview_page"]

    stats = collections.Counter()
    latencies = collections.defaultdict(list)
    problems = []
    answers = {}
    lock = threading.Lock()
    stop_at = time.time() + args.seconds

    def one(rng):
        pick = rng.random()
        if pick < 0.05:
            # What bounds a run (every host; the hostile runs now and then).
            run = rng.choice(HOSTILE_RUNS) if rng.random() < 0.2 else rng.choice(good)["name"]
            return "explain", "/oxprof/api/explain?" + urllib.parse.urlencode({"run": run})
        if pick < 0.45:
            run = rng.choice(good)
            host = rng.choice(run["hosts"])["name"]
            tool = rng.choice(tools_of[run["name"]])
            q = {"run": run["name"], "tag": tool, "host": host}
            kind = "tool"
        elif pick < 0.55:
            run = rng.choice(good)
            q = {"run": run["name"], "tag": "trace_viewer@", "host": rng.choice(run["hosts"])["name"],
                 "resolution": "2000"}
            kind = "trace"
        elif pick < 0.70:
            q = {"run": rng.choice(good)["name"], "sql": rng.choice(ORDINARY_SQL)}
            kind = "sql"
        elif pick < 0.85:
            q = {"run": rng.choice(good)["name"], "sql": rng.choice(HOSTILE_SQL)}
            kind = "sql_hostile"
        else:
            q = {"run": rng.choice(HOSTILE_RUNS), "tag": rng.choice(["overview_page", "trace_viewer@"]),
                 "host": "host0"}
            kind = "store_hostile"
        route = "/oxprof/api/query?" if "sql" in q else "/data?"
        return kind, route + urllib.parse.urlencode(q)

    def client(i):
        rng = random.Random(f"{args.seed}:{i}")
        while time.time() < stop_at and server.poll() is None:
            kind, path = one(rng)
            t0 = time.time()
            try:
                status, _, head = request(port, path, args.hang_s)
            except TimeoutError:
                status, head = "hang", b""
            except (ConnectionError, http.client.HTTPException, OSError) as e:
                status, head = "conn:" + type(e).__name__, b""
            dt = time.time() - t0
            with lock:
                stats[(kind, str(status))] += 1
                # What the refusals say: a few bodies per kind and status, to read the mix.
                if isinstance(status, int) and status >= 400:
                    sample = answers.setdefault(f"{kind}:{status}", collections.Counter())
                    said = head[:160].decode("utf-8", "replace")
                    if len(sample) < 3 or said in sample:
                        sample[said] += 1
                latencies[kind].append(dt)
                bad = status == "hang" or str(status).startswith("conn") or (
                    isinstance(status, int) and status >= 500 and status not in (503, 504))
                if bad and len(problems) < 20:
                    problems.append({"kind": kind, "status": status, "s": round(dt, 2), "path": path[:200],
                                     "body": head.decode("utf-8", "replace")[:200]})

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(args.clients)]
    t_start = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join(args.seconds + args.hang_s + 30)
    alive = server.poll() is None
    stuck = sum(t.is_alive() for t in threads)
    if alive:
        server.send_signal(signal.SIGTERM)
        try:
            exit_status = server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            exit_status = "did not stop in 30 s"
    else:
        exit_status = server.returncode
    dog.stop()
    store.terminate()
    store.wait(10)
    server_log.seek(0)
    server_tail = server_log.read()[-3000:]
    server_log.close()
    shutil.rmtree(tmp, ignore_errors=True)  # the directory this script made, nothing else

    def pct(xs, p):
        xs = sorted(xs)
        return round(xs[min(len(xs) - 1, int(p * len(xs)))], 3) if xs else None

    by_status = collections.Counter()
    for (kind, status), n in stats.items():
        by_status[status] += n
    summary = {
        "clients": args.clients,
        "seconds": round(time.time() - t_start, 1),
        "cache_mb": args.cache_mb,
        "requests": sum(stats.values()),
        "by_status": dict(sorted(by_status.items())),
        "by_kind": {f"{k}:{s}": n for (k, s), n in sorted(stats.items())},
        "latency_s": {k: {"p50": pct(v, 0.5), "p99": pct(v, 0.99), "max": pct(v, 1.0)} for k, v in latencies.items()},
        "peak_rss_mb": round(dog.peak_mb, 1),
        "rss_cap_mb": cap_mb,
        "killed_by_watchdog": dog.killed,
        "server_alive_at_end": alive,
        "clients_stuck": stuck,
        "sigterm_exit": exit_status,
        "problems": problems,
        "refusals": {k: dict(v.most_common()) for k, v in sorted(answers.items()) if v},
    }
    text = json.dumps(summary, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    ok = (alive and not dog.killed and stuck == 0 and not problems and exit_status == 0
          and dog.peak_mb <= cap_mb)
    if not ok:
        print("load-serve: FAILED\n--- server log (tail) ---\n" + server_tail, file=sys.stderr)
    return 0 if ok else 1


def request_full(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise SystemExit(f"load-serve: {path} answered {resp.status}: {body[:300]!r}")
        return body
    finally:
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
