#!/usr/bin/env python3
"""`oxprof mcp` driven by the official MCP Python SDK's client (PyPI `mcp`).

Over stdio (`mcp.client.stdio`): initialize, list the tools (each with an input schema),
call EVERY tool on a real profile and compare each result with the CLI's `--format json`
output of the same verb (the binary run as a subprocess), check that a bad call is a tool
error carrying the CLI's one-line message, and list and read the resources (the runs).
Over streamable HTTP on 127.0.0.1 (`mcp.client.streamable_http`, a free port): the same
checks for two tools, and a request with a foreign Origin (and one with a foreign Host) is
refused with 403 before MCP reads it.

Run with the venv of scripts/ci/setup-mcp-client.sh:
    ~/.cache/oxprof-ci/mcp-venv/bin/python scripts/ci/mcp-client-check.py --bin target/debug/oxprof
Every wait is bounded (a call: 120 s; the whole run: --timeout); the servers it starts
are stopped when it ends.
"""

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent.parent
# Two runs (for diff) of one real JAX program: a logdir of three run directories.
DIFF_LOGDIR = "testdata/diff"
# A real XSpace (TensorFlow, a custom training loop): 48 framework ops, 28 steps.
PROFILE = "testdata/profiles/tf_custom_loop"
# A real PyTorch (Kineto) trace with GPU kernels and operators.
TORCH = "testdata/kineto/train"
CALL_TIMEOUT = 120.0

EXPECTED_TOOLS = {"explain", "list_runs", "top", "steps", "tool", "events", "hlo", "allocations", "query", "diff"}


def cli_json(binary, args, env):
    """The CLI's --format json answer of one verb, parsed."""
    out = subprocess.run(
        [binary, *args, "--format", "json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=CALL_TIMEOUT, check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"oxprof {' '.join(args)} failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)


def result_json(result, name):
    """A tool result's JSON: its structured content, which must equal its text content."""
    if result.is_error:
        raise SystemExit(f"{name}: tool error: {result.content[0].text if result.content else result}")
    text = json.loads(result.content[0].text)
    if result.structured_content is not None and result.structured_content != text:
        raise SystemExit(f"{name}: structured content differs from the text content")
    return text


def same(name, mcp_value, cli_value):
    if mcp_value != cli_value:
        raise SystemExit(
            f"{name}: the MCP result differs from the CLI's --format json\n"
            f"  mcp: {json.dumps(mcp_value)[:600]}\n  cli: {json.dumps(cli_value)[:600]}"
        )
    print(f"  {name}: equal to the CLI's JSON ({len(json.dumps(mcp_value))} bytes)")


def query_rows(answer):
    """A query answer's rows as `oxprof query --format json` writes them (objects, SQL NULLs
    left out)."""
    names = [c["name"] for c in answer["table"]["columns"]]
    return [{n: v for n, v in zip(names, row) if v is not None} for row in answer["table"]["rows"]]


# Each tool's call and the CLI command of the same verb, over a path. `path_of` picks the
# served path the call is about (the server is started per path).
CALLS = [
    ("list_runs", {}, lambda p: ["runs", p]),
    ("explain", {}, lambda p: ["explain", p]),
    ("top", {"what": "ops", "limit": 5}, lambda p: ["top", "ops", p, "--limit", "5"]),
    ("top", {"what": "ops", "by": "occurrences", "offset": 3, "limit": 4},
     lambda p: ["top", "ops", p, "--by", "occurrences", "--offset", "3", "--limit", "4"]),
    ("top", {"what": "hlo"}, lambda p: ["top", "hlo", p]),
    ("steps", {}, lambda p: ["steps", p]),
    ("tool", {"tool": "overview_page", "limit": 3}, lambda p: ["tool", "overview_page", p, "--limit", "3"]),
    ("tool", {"tool": "framework_op_stats", "budget": 4096}, lambda p: ["tool", "framework_op_stats", p, "--budget", "4096"]),
    ("events", {"name": "^Iterator", "aggregate": True, "limit": 5},
     lambda p: ["events", p, "--name", "^Iterator", "--aggregate", "--limit", "5"]),
    ("events", {"name": "train", "start_ms": 0, "end_ms": 50, "limit": 4},
     lambda p: ["events", p, "--name", "train", "--start-ms", "0", "--end-ms", "50", "--limit", "4"]),
    ("hlo", {}, lambda p: ["hlo", p]),
    ("allocations", {"limit": 3}, lambda p: ["allocations", p, "--limit", "3"]),
]
# A real JAX profile with HLO modules: a module's text and an instruction's neighbourhood.
JAX = "testdata/explain/jax_converts"
JAX_CALLS = [
    ("hlo", {}, lambda p: ["hlo", p]),
    ("events", {"name": "^wrapped_convert", "aggregate": True},
     lambda p: ["events", p, "--name", "^wrapped_convert", "--aggregate"]),
]
TORCH_CALLS = [
    ("explain", {}, lambda p: ["explain", p]),
    ("top", {"what": "kernels"}, lambda p: ["top", "kernels", p]),
    ("top", {"what": "operators", "limit": 5}, lambda p: ["top", "operators", p, "--limit", "5"]),
    ("steps", {}, lambda p: ["steps", p]),
    ("events", {"name": "^aten::", "aggregate": True, "limit": 5},
     lambda p: ["events", p, "--name", "^aten::", "--aggregate", "--limit", "5"]),
    ("allocations", {}, lambda p: ["allocations", p]),
]
QUERY = "SELECT name, COUNT(*) AS n FROM slice GROUP BY name ORDER BY n DESC, name LIMIT 7"


async def check_session(session, binary, env, path, calls, every_tool):
    init = await session.initialize()
    print(f"  initialized: {init.server_info.name} {init.server_info.version}, protocol {init.protocol_version}")
    tools = (await session.list_tools()).tools
    names = {t.name for t in tools}
    if names != EXPECTED_TOOLS:
        raise SystemExit(f"tools are {sorted(names)}, expected {sorted(EXPECTED_TOOLS)}")
    for t in tools:
        if t.input_schema.get("type") != "object":
            raise SystemExit(f"{t.name}: no object input schema: {t.input_schema}")
        if t.annotations is None or t.annotations.read_only_hint is not True:
            raise SystemExit(f"{t.name}: not marked read-only")
    with_output = sorted(t.name for t in tools if t.output_schema)
    if with_output != sorted(names):
        raise SystemExit(f"tools without an output schema: {sorted(names - set(with_output))}")
    print(f"  {len(tools)} tools, input schemas all; output schemas: {', '.join(with_output)}")
    called = set()
    for name, arguments, cli in calls:
        result = await session.call_tool(name, arguments, read_timeout_seconds=CALL_TIMEOUT)
        same(f"{name} {arguments}", result_json(result, name), cli_json(binary, cli(path), env))
        called.add(name)
    if every_tool:
        result = await session.call_tool("query", {"sql": QUERY}, read_timeout_seconds=CALL_TIMEOUT)
        answer = result_json(result, "query")
        cli = subprocess.run([binary, "query", QUERY, path, "--format", "json"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=CALL_TIMEOUT, check=True)
        same("query (rows)", query_rows(answer), json.loads(cli.stdout))
        called.add("query")
        # A bad call is a tool error with the CLI's one line.
        bad = await session.call_tool("top", {"what": "ops", "by": "nope"}, read_timeout_seconds=CALL_TIMEOUT)
        cli = subprocess.run([binary, "top", "ops", path, "--by", "nope"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=CALL_TIMEOUT, check=False)
        message = bad.content[0].text if bad.content else ""
        if not bad.is_error or cli.returncode != 2 or cli.stderr.strip() != f"oxprof: {message}":
            raise SystemExit(f"a bad call: is_error={bad.is_error} {message!r}; CLI ({cli.returncode}) {cli.stderr!r}")
        print(f"  a bad call is a tool error with the CLI's line: {message[:80]}…")
    return called


async def check_resources(session):
    resources = (await session.list_resources()).resources
    if not resources:
        raise SystemExit("no resources listed")
    read = await session.read_resource(resources[0].uri)
    run = json.loads(read.contents[0].text)
    if run["run"] != resources[0].name or not run["hosts"]:
        raise SystemExit(f"resource {resources[0].uri}: {run}")
    print(f"  {len(resources)} resources (runs), {resources[0].uri} reads {run}")


def stdio_params(binary, path, env):
    return StdioServerParameters(command=str(binary), args=["mcp", path], cwd=str(ROOT), env=env)


async def over_stdio(binary, env):
    called = set()
    print(f"stdio: oxprof mcp {PROFILE}")
    async with stdio_client(stdio_params(binary, PROFILE, env)) as (read, write):
        async with ClientSession(read, write) as session:
            called |= await check_session(session, binary, env, PROFILE, CALLS, every_tool=True)
            await check_resources(session)
    print(f"stdio: oxprof mcp {TORCH}")
    async with stdio_client(stdio_params(binary, TORCH, env)) as (read, write):
        async with ClientSession(read, write) as session:
            called |= await check_session(session, binary, env, TORCH, TORCH_CALLS, every_tool=False)
    print(f"stdio: oxprof mcp {JAX}")
    async with stdio_client(stdio_params(binary, JAX, env)) as (read, write):
        async with ClientSession(read, write) as session:
            called |= await check_session(session, binary, env, JAX, JAX_CALLS, every_tool=False)
            modules = result_json(await session.call_tool("hlo", {}, read_timeout_seconds=CALL_TIMEOUT), "hlo")
            module = next(row[0] for row in modules["table"]["rows"] if row[0].startswith("jit_step("))
            text_call = {"module": module, "limit": 400}
            text = result_json(await session.call_tool("hlo", text_call, read_timeout_seconds=CALL_TIMEOUT), "hlo")
            same(f"hlo {text_call}", text, cli_json(binary, ["hlo", JAX, "--module", module, "--limit", "400"], env))
            line = next(row[1] for row in text["table"]["rows"] if "wrapped_convert" in row[1] and " fusion(" in row[1])
            instruction = line.strip().lstrip("%").split(" ")[0]
            near_call = {"module": module, "instruction": instruction, "depth": 2}
            near = await session.call_tool("hlo", near_call, read_timeout_seconds=CALL_TIMEOUT)
            same(f"hlo {near_call}", result_json(near, "hlo"),
                 cli_json(binary, ["hlo", JAX, "--module", module, "--instruction", instruction, "--depth", "2"], env))
    print(f"stdio: oxprof mcp {DIFF_LOGDIR}")
    async with stdio_client(stdio_params(binary, DIFF_LOGDIR, env)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            runs = [r.name for r in (await session.list_resources()).resources]
            pair = {"run_a": next(r for r in runs if r.startswith("slow_b32")),
                    "run_b": next(r for r in runs if r.startswith("fast_b32"))}
            call = {**pair, "limit": 20, "budget": 65536}
            result = await session.call_tool("diff", call, read_timeout_seconds=CALL_TIMEOUT)
            cli = ["diff", DIFF_LOGDIR, DIFF_LOGDIR, "--run-a", pair["run_a"], "--run-b", pair["run_b"], "--limit", "20"]
            same(f"diff {call}", result_json(result, "diff"), cli_json(binary, cli, env))
            # Within the default budget: fewer ops per list, and a note saying so.
            result = await session.call_tool("diff", pair, read_timeout_seconds=CALL_TIMEOUT)
            answer = result_json(result, "diff")
            size = len(json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode())
            if size > 16384 or not any("byte budget" in n for n in answer["notes"]):
                raise SystemExit(f"diff within the default budget: {size} bytes, notes {answer['notes']}")
            print(f"  diff {pair}: {size} bytes within the default budget, notes: {answer['notes'][-1]}")
            called.add("diff")
    if called != EXPECTED_TOOLS:
        raise SystemExit(f"not every tool was called: {sorted(EXPECTED_TOOLS - called)}")
    print(f"stdio: every tool called and equal to the CLI ({', '.join(sorted(called))})")


def refused(url, headers):
    request = urllib.request.Request(url, data=b'{"jsonrpc":"2.0","id":1,"method":"ping"}', method="POST",
                                     headers={"Content-Type": "application/json",
                                              "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def over_http(binary, env):
    server = subprocess.Popen([binary, "mcp", PROFILE, "--http", "0"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = await asyncio.wait_for(asyncio.to_thread(server.stdout.readline), 60)
        match = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line)
        if not match:
            raise SystemExit(f"no address in the banner: {line!r} {server.stderr.read() if server.poll() is not None else ''}")
        url = match.group(1)
        print(f"http: oxprof mcp {PROFILE} --http 0 at {url}")
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write) as session:
                await check_session(session, binary, env, PROFILE, CALLS[:2], every_tool=False)
                await check_resources(session)
        port = url.split(":")[2].split("/")[0]
        status, body = refused(url, {"Origin": "https://evil.example"})
        if status != 403 or "evil.example" not in body:
            raise SystemExit(f"a foreign Origin was not refused: {status} {body!r}")
        print(f"  a foreign Origin is refused: {status} {body.strip()}")
        status, body = refused(url, {"Host": f"evil.example:{port}"})
        if status != 403:
            raise SystemExit(f"a foreign Host was not refused: {status} {body!r}")
        print(f"  a foreign Host is refused: {status} {body.strip()[:100]}")
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, help="the oxprof binary")
    parser.add_argument("--timeout", type=float, default=900, help="seconds for the whole check")
    args = parser.parse_args()
    binary = str(Path(args.bin).resolve())
    with tempfile.TemporaryDirectory(prefix="oxprof-mcp-check-") as cache:
        # The analysis cache of this check, not the user's.
        env = {**os.environ, "OXPROF_CACHE_DIR": cache}
        await asyncio.wait_for(over_stdio(binary, env), args.timeout)
        await asyncio.wait_for(over_http(binary, env), args.timeout)
    print("mcp-client-check: all checks passed")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except SystemExit as e:
        if e.code not in (None, 0):
            print(f"mcp-client-check: FAILED: {e.code}", file=sys.stderr)
            sys.exit(1)
