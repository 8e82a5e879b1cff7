"""TensorBoard's oxprof tab (oxprof.tensorboard): the entry point, the routes, the proxy's
rules, and the `oxprof serve` child's lifecycle. The browser test with real TensorBoard is
scripts/ci/tensorboard-tab-check.py."""

from __future__ import annotations

import argparse
import http.server
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from importlib import metadata

import pytest

pytest.importorskip("tensorboard")

from tensorboard.plugins import base_plugin  # noqa: E402
from werkzeug.test import Client  # noqa: E402

from conftest import fixture  # noqa: E402
from oxprof.tensorboard import OxprofPlugin, has_profiles  # noqa: E402
from oxprof.tensorboard._child import (  # noqa: E402
    ChildServer,
    ServerError,
    loopback_address,
    oxprof_command,
    serving_address,
)
from oxprof.tensorboard._proxy import MAX_REQUEST_BODY, Proxy  # noqa: E402

PREFIX = "/data/plugin/oxprof/ui"


def logdir_with_a_profile(tmp_path):
    shutil.copytree(fixture("jax_train") / "plugins", tmp_path / "logs" / "plugins")
    return tmp_path / "logs"


def plugin(logdir, host="127.0.0.1", bind_all=False) -> OxprofPlugin:
    flags = argparse.Namespace(logdir=str(logdir), host=host, bind_all=bind_all)
    return OxprofPlugin(base_plugin.TBContext(logdir=str(logdir), flags=flags))


def test_the_wheel_registers_the_plugin_with_tensorboard():
    found = [ep for ep in metadata.entry_points(group="tensorboard_plugins") if ep.name == "oxprof"]
    assert len(found) == 1, found
    assert found[0].load() is OxprofPlugin


def test_routes_and_frontend(tmp_path):
    tab = plugin(logdir_with_a_profile(tmp_path))
    apps = tab.get_plugin_apps()
    meta = tab.frontend_metadata()
    assert meta.es_module_path in apps and meta.tab_name == "oxprof"
    assert {"/ui", "/ui/*"} <= set(apps)
    response = Client(apps["/index.js"]).get("/data/plugin/oxprof/index.js")
    assert response.status_code == 200 and response.mimetype == "text/javascript"
    assert "export async function render()" in response.get_data(as_text=True)
    assert "new URL('ui/', document.baseURI)" in response.get_data(as_text=True)


def test_active_when_the_logdir_has_profiles(tmp_path):
    assert plugin(logdir_with_a_profile(tmp_path)).is_active()
    (tmp_path / "empty").mkdir()
    assert not plugin(tmp_path / "empty").is_active()
    torch = tmp_path / "torch" / "run"
    torch.mkdir(parents=True)
    (torch / "host_1.pt.trace.json.gz").write_bytes(b"")
    assert has_profiles(str(tmp_path / "torch"))
    # The scan is bounded: past max_entries it gives up.
    many = tmp_path / "many"
    many.mkdir()
    for i in range(50):
        (many / f"f{i}").write_bytes(b"")
    (many / "z.xplane.pb").write_bytes(b"")
    assert not has_profiles(str(many), max_entries=10)
    assert has_profiles("gs://bucket/logs")


def test_only_loopback_addresses_are_accepted_from_the_child():
    assert serving_address("oxprof: serving /logs at http://127.0.0.1:8791/") == ("127.0.0.1", 8791)
    assert serving_address("oxprof: serving /logs at http://[::1]:9/") == ("::1", 9)
    assert serving_address("oxprof: press Ctrl-C to stop") is None
    for url in ["http://10.0.0.1:80/", "http://example.com:80/", "https://127.0.0.1:9/", "http://127.0.0.1/"]:
        with pytest.raises(ServerError, match="loopback"):
            loopback_address(url)
    with pytest.raises(ServerError, match="loopback"):
        serving_address("oxprof: serving /logs at http://192.168.1.1:8791/")


def test_a_child_announcing_another_address_is_refused_and_stopped():
    announce = "print('oxprof: serving /logs at http://10.1.2.3:8791/', flush=True); import time; time.sleep(60)"
    child = ChildServer([sys.executable, "-c", announce])
    with pytest.raises(ServerError, match="not http:// to a loopback address"):
        child.address()
    assert not child.running()


def alive(pid: int) -> bool:
    """Whether `pid` runs (an exited process waiting for its new parent to reap it does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


class Recorder(http.server.BaseHTTPRequestHandler):
    """A stand-in for `oxprof serve` on 127.0.0.1 that records what it was sent."""

    seen: list = []

    def _answer(self, body: bytes, content_type: str = "application/json") -> None:
        length = int(self.headers.get("Content-Length") or 0)
        Recorder.seen.append((self.command, self.path, dict(self.headers), self.rfile.read(length) if length else b""))
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Not-Forwarded", "1")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        if self.path == "/":
            self._answer(b'<script src="/assets/index.js"></script><link href="/assets/index.css">', "text/html")
        else:
            self._answer(b"{}")

    do_POST = do_GET

    def log_message(self, *args):
        pass


class FixedChild:
    def __init__(self, address):
        self._address = address

    def address(self):
        if isinstance(self._address, Exception):
            raise self._address
        return self._address


@pytest.fixture
def recorder():
    Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[:2]
    server.shutdown()
    server.server_close()


def test_the_proxy_forwards_below_its_prefix_to_the_child_only(recorder):
    client = Client(Proxy(FixedChild(recorder), PREFIX))
    host = {"Host": "127.0.0.1:6006"}
    response = client.get(f"{PREFIX}/oxprof/api/runs?x=1", headers=host)
    assert response.status_code == 200 and response.get_data() == b"{}"
    assert "X-Not-Forwarded" not in response.headers
    method, path, headers, _ = Recorder.seen[-1]
    assert (method, path) == ("GET", "/oxprof/api/runs?x=1")
    assert headers["Host"] == f"{recorder[0]}:{recorder[1]}"
    # Absolute-looking paths stay paths on the child: nothing else is ever dialled.
    before = len(Recorder.seen)
    response = client.get(f"{PREFIX}//example.com/x", headers=host)
    assert len(Recorder.seen) == before + 1 and Recorder.seen[-1][1].endswith("/example.com/x")
    # The page's scripts are found below the prefix.
    page = client.get(f"{PREFIX}/", headers=host).get_data()
    assert b'src="/data/plugin/oxprof/ui/assets/index.js"' in page and b'href="/data/plugin/oxprof/ui/assets/' in page
    # Without the trailing slash: redirected to it (the UI's relative links need it).
    response = client.get(PREFIX, query_string="run=r", headers=host)
    assert response.status_code == 302 and response.headers["Location"].endswith(f"{PREFIX}/?run=r")


def test_the_proxy_refuses_what_it_must_not_forward(recorder):
    client = Client(Proxy(FixedChild(recorder), PREFIX, hosts=["tb.example"]))
    ok = {"Host": "127.0.0.1:6006"}
    assert client.get(f"{PREFIX}/", headers={"Host": "rebind.test:6006"}).status_code == 403
    assert client.get(f"{PREFIX}/", headers={"Host": "tb.example:6006"}).status_code == 200
    assert client.put(f"{PREFIX}/x", headers=ok).status_code == 405
    assert client.delete(f"{PREFIX}/x", headers=ok).status_code == 405
    foreign = client.post(f"{PREFIX}/capture_profile", headers={**ok, "Origin": "http://evil.test"})
    assert foreign.status_code == 403 and b"cross-origin" in foreign.get_data()
    big = client.post(f"{PREFIX}/x", headers={**ok, "Origin": "http://127.0.0.1:6006"}, data=b"x" * (MAX_REQUEST_BODY + 1))
    assert big.status_code == 413
    assert not [s for s in Recorder.seen if s[0] != "GET"], Recorder.seen
    # A same-origin POST goes through with the child's own origin and the token.
    done = client.post(
        f"{PREFIX}/capture_profile?a=1",
        headers={**ok, "Origin": "http://127.0.0.1:6006", "X-Oxprof-Token": "t"},
        data=b"",
    )
    assert done.status_code == 200
    method, path, headers, _ = Recorder.seen[-1]
    assert (method, path, headers["X-Oxprof-Token"]) == ("POST", "/capture_profile?a=1", "t")
    assert headers["Origin"] == f"http://{recorder[0]}:{recorder[1]}"
    # Any Host with --bind_all.
    assert Client(Proxy(FixedChild(recorder), PREFIX, any_host=True)).get(f"{PREFIX}/", headers={"Host": "10.1.2.3:6006"}).status_code == 200


def test_a_child_that_cannot_start_is_a_502_saying_why(tmp_path, oxprof_bin):
    client = Client(Proxy(FixedChild(ServerError("cannot run oxprof: no such file")), PREFIX))
    response = client.get(f"{PREFIX}/", headers={"Host": "localhost:6006"})
    assert response.status_code == 502 and b"cannot run oxprof: no such file" in response.get_data()
    child = ChildServer([str(tmp_path / "no-such-oxprof"), "serve"])
    with pytest.raises(ServerError, match="cannot run"):
        child.address()
    # A path that does not exist: oxprof serve's own line.
    child = ChildServer(oxprof_command(oxprof_bin, str(tmp_path / "nope")))
    with pytest.raises(ServerError, match="exited with status 2 before serving.*nope"):
        child.address()


def test_the_tab_serves_oxprofs_ui_through_the_child(tmp_path, oxprof_bin):
    logdir = logdir_with_a_profile(tmp_path)
    tab = plugin(logdir)
    try:
        client = Client(tab.get_plugin_apps()["/ui/*"])
        host = {"Host": "127.0.0.1:6006"}
        page = client.get(f"{PREFIX}/", headers=host)
        assert page.status_code == 200
        csp = page.headers["Content-Security-Policy"]
        assert csp.endswith("frame-ancestors 'self'") and "X-Frame-Options" not in page.headers
        assert b'src="/data/plugin/oxprof/ui/assets/index.js"' in page.get_data()
        assert b'name="oxprof-token"' in page.get_data()
        runs = client.get(f"{PREFIX}/data/plugin/profile/runs", headers=host)
        assert runs.status_code == 200 and runs.json == [p.name for p in (logdir / "plugins" / "profile").iterdir()]
        script = client.get(f"{PREFIX}/assets/index.js", headers=host)
        assert script.status_code == 200 and script.mimetype == "text/javascript"
        # A foreign site's page cannot make it work (the child's own rule, passed on).
        refused = client.get(f"{PREFIX}/oxprof/api/runs", headers={**host, "Sec-Fetch-Site": "cross-site"})
        assert refused.status_code == 403
        pid = tab._child.pid()
        assert tab._child.running()
    finally:
        tab.stop()
    assert not tab._child.running()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_the_child_dies_with_tensorboard(tmp_path, oxprof_bin):
    """SIGKILL of the process that runs the plugin (no atexit) still ends the child."""
    logdir = logdir_with_a_profile(tmp_path)
    script = (
        "import sys\n"
        "from oxprof.tensorboard._child import ChildServer, oxprof_command\n"
        f"child = ChildServer(oxprof_command({oxprof_bin!r}, {str(logdir)!r}))\n"
        "child.address()\n"
        "print(child.pid(), flush=True)\n"
        "sys.stdin.read()\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        pid = int(parent.stdout.readline())
        os.kill(pid, 0)  # running
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
    # Bounded: the signal is delivered at once; the server stops within seconds.
    for _ in range(300):
        if not alive(pid):
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail(f"oxprof serve (pid {pid}) outlived the process that started it")
