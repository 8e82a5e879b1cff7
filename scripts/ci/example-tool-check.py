#!/usr/bin/env python3
"""The registry's promise, checked end to end: a tool added by one module and one row
(crates/oxprof-api/src/example_tool.rs, built with the `example-tool` feature) reaches
every front-end with no other change. Against a binary and an extension module built with
that feature (scripts/ci/test-example-tool.sh builds them):

- the CLI: `oxprof data --help` lists it with its title; `oxprof data example_binary RUN`
  writes its binary body byte for byte;
- HTTP: `oxprof serve` lists it in XProf's `/run_tools` and in the UI's `/oxprof/api/run`,
  and `/data` answers the same bytes as `application/octet-stream`;
- Python: `oxprof.tools()` lists it and `oxprof.open(RUN).tool("example_binary").xprof_body`
  is the same bytes.

The UI's Tools menu is checked in a browser by ui/e2e/example_tool.mjs. Every wait is
bounded; the server it starts is stopped when it ends.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
LOGDIR = ROOT / "testdata/profiles"
RUN_DIR = LOGDIR / "tf_custom_loop"
TOOL = "example_binary"
TITLE = "Example binary tool"
# crates/oxprof-api/src/example_tool.rs's MAGIC: not UTF-8, so a text path is caught.
MAGIC = b"\x00\xffOXPROF-EXAMPLE\n"


def expected_body(hosts):
    return MAGIC + b"".join(h.encode() + b"\n" for h in hosts)


def run(cmd, **kwargs):
    done = subprocess.run(cmd, capture_output=True, timeout=300, **kwargs)
    if done.returncode != 0:
        sys.exit(f"example tool: {cmd[:3]} exited with {done.returncode}:\n{done.stderr.decode(errors='replace')}")
    return done


def check_cli(binary):
    help_text = run([binary, "data", "--help"]).stdout.decode()
    assert TOOL in help_text and TITLE in help_text, f"`oxprof data --help` does not list {TOOL}:\n{help_text}"
    body = run([binary, "data", TOOL, str(RUN_DIR)]).stdout
    assert body.startswith(MAGIC), f"CLI body: {body[:64]!r}"
    print(f"cli: help lists {TOOL}; `data` wrote {len(body)} bytes starting with the magic")
    return body


def check_http(binary):
    server = subprocess.Popen(
        [binary, "serve", str(LOGDIR), "--port", "0", "--bind", "127.0.0.1", "--quiet", "--no-cache"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        line = server.stdout.readline().decode()
        assert " at http://127.0.0.1:" in line, line + server.stderr.read().decode()
        base = line.split(" at ", 1)[1].strip().rstrip("/")

        def get(path):
            with urllib.request.urlopen(base + path, timeout=120) as response:
                return response.headers.get("Content-Type"), response.read()

        runs = json.loads(get("/data/plugin/profile/runs")[1])
        run_name = next(r for r in runs if r.startswith("tf_custom_loop"))
        quoted = urllib.request.quote(run_name, safe="")
        xprof_tools = json.loads(get(f"/data/plugin/profile/run_tools?run={quoted}")[1])
        assert TOOL in xprof_tools, f"/run_tools: {xprof_tools}"
        offered = [t["name"] for t in json.loads(get(f"/oxprof/api/run?run={quoted}")[1])["offered"]]
        assert TOOL in offered, f"/oxprof/api/run offered: {offered}"
        listed = json.loads(get(f"/data/plugin/profile/hosts?run={quoted}&tag={TOOL}")[1])
        hosts = [h["hostname"] for h in listed if h["hostname"] != "ALL_HOSTS"]
        content_type, body = get(f"/data/plugin/profile/data?run={quoted}&tag={TOOL}&host={hosts[0]}")
        assert content_type == "application/octet-stream", content_type
        assert body == expected_body([hosts[0]]), f"/data body: {body!r}"
        print(f"http: /run_tools and /oxprof/api/run list {TOOL}; /data answered {len(body)} bytes ({content_type})")
        return hosts
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def check_python(extension, hosts, cli_body):
    with tempfile.TemporaryDirectory() as tmp:
        package = Path(tmp) / "oxprof"
        shutil.copytree(ROOT / "python/oxprof", package)
        shutil.copy(extension, package / "_oxprof.abi3.so")
        code = f"""
import json, sys
import oxprof
assert oxprof.__file__.startswith({tmp!r}), oxprof.__file__
names = [t["name"] for t in oxprof.tools()]
assert {TOOL!r} in names, names
report = oxprof.open({str(RUN_DIR)!r}).tool({TOOL!r})
assert report.content_type == "application/octet-stream", report.content_type
sys.stdout.buffer.write(report.xprof_body)
"""
        body = run([sys.executable, "-c", code], cwd=tmp, env={**os.environ, "PYTHONPATH": tmp}).stdout
    assert cli_body == expected_body(hosts), f"CLI body: {cli_body!r}"
    assert body == cli_body, f"Python body {body!r} != CLI body {cli_body!r}"
    print(f"python: oxprof.tools() lists {TOOL}; oxprof.open(...).tool answered the CLI's {len(body)} bytes")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="oxprof built with --features example-tool")
    parser.add_argument("--extension", required=True, help="the extension module (lib_oxprof.so) built with the feature")
    args = parser.parse_args()
    cli_body = check_cli(args.bin)
    hosts = check_http(args.bin)
    check_python(args.extension, hosts, cli_body)
    print("example tool: CLI, HTTP and Python all see it")


if __name__ == "__main__":
    main()
