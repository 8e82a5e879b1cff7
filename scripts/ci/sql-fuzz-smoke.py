#!/usr/bin/env python3
"""SQL fuzz smoke: hostile queries from a small grammar (deep nesting, wide unions, string
blow-ups, doubling and recursive CTEs, big GROUP BYs and joins) against a running
`oxprof serve` and, for some of them, `oxprof query`, each process under an RSS watchdog.

    scripts/ci/sql-fuzz-smoke.py                       # 60 s, seed 38, target/release/oxprof
    scripts/ci/sql-fuzz-smoke.py --seconds 600 --seed 7
    scripts/ci/sql-fuzz-smoke.py --seed 7 --only 123   # replay query 123 of seed 7

Fails (exit 1, printing the seed, the query's number and the query) when the server dies
(an abort, a stack overflow), answers with a 5xx, answers past its time limit (20 s) plus
a grace, or its RSS passes the cap; or when `oxprof query` dies of a signal or a panic.
Query i of a seed is always the same query (`random.Random(f"{seed}:{i}")`).

Loopback only: the server binds 127.0.0.1, port 0.
"""

import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rss_watchdog import Watchdog, rss_mb  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# ---- the grammar ------------------------------------------------------------------------

BIG = [0, 1, 7, 1000, 65536, 1 << 20, 100_000_000, 1_000_000_000, 2147483647, 9_000_000_000_000_000_000]
ROWS = [1, 8, 100, 10_000, 1_000_000, 100_000_000, 10_000_000_000]
STRING_FUNCS = ["repeat", "lpad", "rpad", "concat", "concat_ws", "replace", "translate", "overlay",
                "regexp_replace", "levenshtein", "upper", "reverse", "to_hex", "substr"]


def pick(r, items):
    return items[r.randrange(len(items))]


def text(r, leaves, depth=0):
    """A string expression over `leaves` (column expressions), often a large one."""
    if depth > 3 or r.random() < 0.25:
        return pick(r, leaves + ["'x'", "'ab'", "''", "'é'", "'%s'" % ("y" * r.randrange(1, 300))])
    inner = text(r, leaves, depth + 1)
    f = pick(r, STRING_FUNCS)
    n = pick(r, BIG)
    if f == "repeat":
        return f"repeat({inner}, {n})"
    if f in ("lpad", "rpad"):
        return f"{f}({inner}, {n}, {pick(r, [chr(39) + ' ' + chr(39), chr(39) + 'ab' + chr(39), chr(39) + 'é' + chr(39)])})"
    if f == "concat":
        return "concat(" + ", ".join([inner] * r.randrange(1, 200)) + ")"
    if f == "concat_ws":
        return f"concat_ws({inner}, " + ", ".join([inner] * r.randrange(1, 50)) + ")"
    if f == "replace":
        return f"replace({inner}, {pick(r, [chr(39) * 2, chr(39) + 'x' + chr(39)])}, {text(r, leaves, depth + 1)})"
    if f == "translate":
        return f"translate({inner}, 'xy', 'éé')"
    if f == "overlay":
        return f"overlay({inner} placing {text(r, leaves, depth + 1)} from 1 for 1)"
    if f == "regexp_replace":
        pattern = pick(r, ["", ".", "x*", "(a)"])
        replacement = pick(r, ["yy", chr(92) + "1" * 3, "$0$0"])
        return f"regexp_replace({inner}, '{pattern}', '{replacement}', 'g')"
    if f == "levenshtein":
        return f"CAST(levenshtein({inner}, {text(r, leaves, depth + 1)}) AS VARCHAR)"
    if f == "to_hex":
        return f"to_hex(length({inner}))"
    if f == "substr":
        return f"substr({inner}, 1, {n})"
    if r.random() < 0.3:
        return " || ".join([inner] * r.randrange(2, 64))
    return f"{f}({inner})"


def source(r):
    """A FROM clause and the text columns it has: a range, a model table, or a join."""
    choice = r.randrange(6)
    if choice == 0:
        return f"range({pick(r, ROWS)})", ["CAST(value AS VARCHAR)"]
    if choice == 1:
        return "slice", ["name"]
    if choice == 2:
        return f"range({pick(r, ROWS)}) a, range({pick(r, ROWS)}) b", ["CAST(a.value AS VARCHAR)"]
    if choice == 3:
        return "slice a JOIN slice b ON a.name = b.name", ["a.name", "b.name"]
    if choice == 4:
        return "args", ["key", "string_value"]
    return f"(SELECT value, CAST(value AS VARCHAR) AS name FROM range({pick(r, ROWS)})) t", ["name"]


def string_blowup(r):
    src, leaves = source(r)
    expr = text(r, leaves)
    wrap = pick(r, ["sum(length({}))", "max(length({}))", "count(DISTINCT {})", "{}", "string_agg({}, ',')",
                    "array_agg({})", "length(string_agg({}, ''))"])
    tail = pick(r, ["", " LIMIT 5", " GROUP BY 1" if wrap == "{}" else ""])
    return f"SELECT {wrap.format(expr)} FROM {src}{tail}"


def deep(r):
    kind = r.randrange(6)
    n = pick(r, [10, 50, 100, 127, 129, 300, 1000, 5000, 20000, 30000])
    if kind == 0:
        return "SELECT " + "+".join(["1"] * n)
    if kind == 1:
        d = min(n, 60)
        return "SELECT " + "(" * d + "1" + ")" * d
    if kind == 2:
        d = min(n, 80)
        return "SELECT " + "(SELECT " * d + "1" + ")" * d
    if kind == 3:
        return "SELECT " + " OR ".join([f"value = {i}" for i in range(min(n, 3000))]).join(["1=1 AND (", ")"]) + " FROM range(10)"
    if kind == 4:
        return "SELECT CASE " + " ".join(f"WHEN value = {i} THEN '{i}'" for i in range(min(n, 3000))) + " END FROM range(100)"
    return "SELECT count(*) FROM range(10) " + " ".join(f"JOIN range(2) t{i} ON true" for i in range(min(n, 60) // 4))


def wide_union(r):
    n = pick(r, [2, 100, 511, 512, 513, 1000, 2500, 3000, 3500])
    term = pick(r, ["SELECT 1", "SELECT count(*) FROM slice", "SELECT value FROM range(10)"])
    op = pick(r, [" UNION ALL ", " UNION ", " INTERSECT ", " EXCEPT "])
    return op.join([term] * n)


def doubling(r):
    levels = r.randrange(1, 30)
    ctes = ["a0 AS (SELECT value AS x FROM range(%d))" % pick(r, [1, 2, 1000])]
    for i in range(1, levels + 1):
        ctes.append(f"a{i} AS (SELECT x FROM a{i - 1} UNION ALL SELECT x FROM a{i - 1})")
    return "WITH " + ", ".join(ctes) + f" SELECT count(*) FROM a{levels}"


def recursive(r):
    limit = pick(r, [10, 1000, 100_000, 10_000_000, 1_000_000_000])
    kind = r.randrange(4)
    if kind == 0:
        return f"WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < {limit}) SELECT count(*) FROM t"
    if kind == 1:
        return ("WITH RECURSIVE t(n, s) AS (SELECT 1, 'x' UNION ALL SELECT n + 1, s || s FROM t WHERE n < %d) "
                "SELECT max(length(s)) FROM t" % pick(r, [10, 30, 40, 64]))
    if kind == 2:
        return (f"WITH RECURSIVE t(n) AS (SELECT value FROM range(1000) UNION ALL SELECT n + 1 FROM t WHERE n < {limit}) "
                "SELECT n, count(*) FROM t GROUP BY n ORDER BY 2 DESC LIMIT 3")
    return "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT n FROM t LIMIT %d" % pick(r, [1, 10_000, 100_000_000])


def group_by(r):
    rows = pick(r, ROWS)
    keys = pick(r, [1, 1000, rows])
    kind = r.randrange(4)
    if kind == 0:
        return f"SELECT value % {keys} AS k, count(*) FROM range({rows}) GROUP BY k ORDER BY 2 DESC LIMIT 3"
    if kind == 1:
        return f"SELECT CAST(value AS VARCHAR) || 'x' AS k, count(*) FROM range({rows}) GROUP BY k LIMIT 3"
    if kind == 2:
        return "SELECT a.name, b.name, count(*) FROM slice a, slice b GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 5"
    return f"SELECT value FROM range({rows}) ORDER BY value DESC LIMIT 3"


def ordinary(r):
    return pick(r, [
        "SELECT name, count(*) AS n, sum(dur) AS total FROM slice GROUP BY name ORDER BY total DESC LIMIT 5",
        "SELECT * FROM top_ops_per_step WHERE rank = 1 ORDER BY step LIMIT 3",
        "SELECT host, count(*) FROM args GROUP BY host",
        "SELECT * FROM steps ORDER BY step_num LIMIT 3",
        "SELEC 1",
        "SELECT * FROM no_such_table",
        "COPY (SELECT 1) TO '/tmp/oxprof-fuzz-copy.csv'",
    ])


KINDS = [("string", string_blowup, 4), ("deep", deep, 2), ("union", wide_union, 2), ("doubling", doubling, 2),
         ("recursive", recursive, 2), ("group_by", group_by, 2), ("ordinary", ordinary, 1)]


def query(seed, i):
    r = random.Random(f"{seed}:{i}")
    total = sum(w for _, _, w in KINDS)
    x = r.randrange(total)
    for name, make, weight in KINDS:
        if x < weight:
            return name, make(r)
        x -= weight
    return "ordinary", ordinary(r)


# ---- running them -----------------------------------------------------------------------

def fail(args, i, kind, sql, why):
    shown = sql if len(sql) <= 2000 else sql[:1000] + f" …[{len(sql)} bytes]… " + sql[-500:]
    print(f"sql-fuzz-smoke: FAILED: {why}\n  seed {args.seed}, query {i} ({kind}); replay: "
          f"scripts/ci/sql-fuzz-smoke.py --seed {args.seed} --only {i}\n  {shown}", file=sys.stderr)
    sys.exit(1)


def start_server(args):
    command = [args.bin, "serve", args.profile, "--port", "0", "--bind", "127.0.0.1", "--quiet",
               "--cache-mb", str(args.cache_mb), "--no-cache"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    urls = [w for w in line.split() if w.startswith("http://127.0.0.1:")]
    if not urls:
        server.kill()
        sys.exit(f"sql-fuzz-smoke: the server did not start: {line!r} {server.stderr.read()[-500:]}")
    return server, urls[0].rstrip("/").removeprefix("http://")


def ask(addr, sql, timeout):
    host, port = addr.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=timeout)
    started = time.monotonic()
    try:
        connection.request("GET", "/oxprof/api/query?" + urllib.parse.urlencode({"sql": sql}), headers={"Host": addr})
        response = connection.getresponse()
        body = response.read()
        return response.status, body, time.monotonic() - started
    except (OSError, http.client.HTTPException) as e:
        return None, repr(e).encode(), time.monotonic() - started
    finally:
        connection.close()


def run_cli(args, sql):
    command = [args.bin, "query", sql, args.profile, "--format", "csv", "--timeout", str(args.time_limit),
               "--sql-memory", f"{args.cli_memory_mb}MiB", "--no-cache"]
    started = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, RUST_BACKTRACE="0"))
    dog = Watchdog(child.pid, args.rss_cap_mb)
    try:
        _, stderr = child.communicate(timeout=args.time_limit + args.grace)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        dog.stop()
        return f"oxprof query ran past {args.time_limit} s + {args.grace} s", dog.peak_mb
    dog.stop()
    if dog.killed:
        return f"oxprof query's RSS passed {args.rss_cap_mb} MB", dog.peak_mb
    if child.returncode not in (0, 2) or "panicked" in stderr:
        return f"oxprof query exited {child.returncode}: {stderr.strip()[-300:]}", dog.peak_mb
    del started
    return None, dog.peak_mb


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_bin = os.path.join(ROOT, "target/release/oxprof")
    parser.add_argument("--bin", default=os.environ.get("OXPROF_BIN", default_bin))
    parser.add_argument("--profile", default=os.path.join(ROOT, "testdata/profiles/jax_train"))
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("SQL_FUZZ_SECONDS", 60)))
    parser.add_argument("--seed", default=os.environ.get("SQL_FUZZ_SEED", "38"))
    parser.add_argument("--only", type=int, help="run only query ONLY of the seed (to reproduce a failure)")
    parser.add_argument("--rss-cap-mb", type=float, default=1536, help="the server's RSS budget (MB)")
    parser.add_argument("--cache-mb", type=int, default=64)
    parser.add_argument("--time-limit", type=float, default=20, help="the server's SQL time limit (s)")
    parser.add_argument("--grace", type=float, default=5, help="seconds past the time limit an answer may take")
    parser.add_argument("--cli-every", type=int, default=8, help="also run every Nth query with oxprof query (0: never)")
    parser.add_argument("--cli-memory-mb", type=int, default=1024)
    parser.add_argument("--print", action="store_true", help="print the queries instead of running them")
    args = parser.parse_args()
    if args.print:
        for i in ([args.only] if args.only is not None else range(20)):
            print(i, *query(args.seed, i))
        return
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"sql-fuzz-smoke: no oxprof binary at {args.bin} (cargo build --release -p oxprof, or --bin)")
    server, addr = start_server(args)
    dog = Watchdog(server.pid, args.rss_cap_mb)
    statuses = {}
    slowest = (0.0, None)
    cli_peak = 0.0
    ran = 0
    deadline = time.monotonic() + args.seconds
    indices = [args.only] if args.only is not None else range(10**9)
    try:
        for i in indices:
            if args.only is None and time.monotonic() > deadline:
                break
            kind, sql = query(args.seed, i)
            status, body, elapsed = ask(addr, sql, args.time_limit + args.grace + 5)
            ran += 1
            statuses[status] = statuses.get(status, 0) + 1
            if elapsed > slowest[0]:
                slowest = (elapsed, i)
            if server.poll() is not None:
                tail = server.stderr.read()[-600:]
                fail(args, i, kind, sql, f"the server died (exit {server.returncode}, peak {dog.peak_mb:.0f} MB): {tail}")
            if dog.killed:
                fail(args, i, kind, sql, f"the server's RSS passed {args.rss_cap_mb} MB")
            if status is None:
                fail(args, i, kind, sql, f"no answer: {body.decode(errors='replace')}")
            if status >= 500:
                fail(args, i, kind, sql, f"HTTP {status}: {body[:300].decode(errors='replace')}")
            if elapsed > args.time_limit + args.grace:
                fail(args, i, kind, sql, f"answered after {elapsed:.1f} s (limit {args.time_limit} s)")
            try:
                answer = json.loads(body)
            except ValueError:
                fail(args, i, kind, sql, f"HTTP {status} with a body that is not JSON: {body[:200]!r}")
            if status != 200 and ("\n" in answer.get("error", "\n")):
                fail(args, i, kind, sql, f"HTTP {status} without a one-line error: {body[:300]!r}")
            if args.cli_every and i % args.cli_every == 0:
                why, peak = run_cli(args, sql)
                cli_peak = max(cli_peak, peak)
                if why:
                    fail(args, i, kind, sql, why)
    finally:
        peak = dog.peak_mb
        dog.stop()
        server.terminate()
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:
            server.kill()
    shown = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items(), key=lambda kv: str(kv[0])))
    print(f"sql-fuzz-smoke: passed: {ran} queries in {args.seconds:.0f} s (seed {args.seed}; HTTP {shown}); "
          f"slowest answer {slowest[0]:.1f} s (query {slowest[1]}); server peak RSS {peak:.0f} MB, "
          f"oxprof query's {cli_peak:.0f} MB (cap {args.rss_cap_mb:.0f} MB)", file=sys.stderr)
    if server.returncode not in (0, None, -15):
        sys.exit(f"sql-fuzz-smoke: the server exited {server.returncode} on SIGTERM: {server.stderr.read()[-500:]}")


if __name__ == "__main__":
    main()
