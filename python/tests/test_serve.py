"""`oxprof.serve()`: the UI and API from this process, on 127.0.0.1, for notebooks."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

import oxprof
from conftest import fixture


def get(url: str):
    return urllib.request.urlopen(url, timeout=30)


def test_serve_returns_its_url_and_stops():
    server = oxprof.serve(fixture("jax_train"))
    try:
        assert isinstance(server, str) and server == server.url
        assert server.url == f"http://127.0.0.1:{server.port}/" and server.port > 0
        assert server.running and server in oxprof.running_servers()
        with get(server.url + "oxprof/api/info") as response:
            info = json.load(response)
        assert info["demo"] is False and info["version"] == oxprof.__version__
        with get(server.url + "data/plugin/profile/runs") as response:
            assert json.load(response) == oxprof.open(fixture("jax_train")).runs
    finally:
        server.stop()
    assert not server.running and server not in oxprof.running_servers()
    with pytest.raises(urllib.error.URLError):
        get(server.url + "oxprof/api/info")
    server.stop()  # a second stop does nothing


def test_the_ui_may_be_framed_by_loopback_pages_only():
    with oxprof.serve() as server:  # the bundled demo
        with get(server.url) as response:
            csp = response.headers["Content-Security-Policy"]
            assert response.headers["X-Frame-Options"] is None
        assert csp.endswith(
            "frame-ancestors 'self' http://localhost:* http://127.0.0.1:* https://localhost:* https://127.0.0.1:*"
        )
        html = server._repr_html_()
        assert f'<iframe src="{server.url}"' in html and 'height="800"' in html
    assert "stopped" in server._repr_html_()


def test_a_busy_port_is_an_error():
    with oxprof.serve(fixture("jax_train")) as first:
        with pytest.raises(oxprof.Error, match=f"cannot serve: port {first.port} is in use"):
            oxprof.serve(fixture("jax_train"), port=first.port)


def test_a_missing_path_is_not_served(tmp_path):
    with pytest.raises(oxprof.ProfileNotFound, match="cannot serve"):
        oxprof.serve(tmp_path / "nope")
