"""Failures raise oxprof's exceptions with the one-line messages the CLI prints."""

from __future__ import annotations

import gzip

import pytest

import oxprof
from conftest import cli_error, fixture, run_cli


def test_a_missing_path(oxprof_bin, tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(oxprof.ProfileNotFound) as caught:
        oxprof.open(missing)
    assert isinstance(caught.value, FileNotFoundError) and isinstance(caught.value, oxprof.Error)
    assert str(caught.value) == cli_error(oxprof_bin, "data", "overview_page", missing)


def test_a_directory_without_profiles(oxprof_bin, tmp_path):
    (tmp_path / "notes.txt").write_text("not a profile")
    with pytest.raises(oxprof.ProfileNotFound) as caught:
        oxprof.open(tmp_path)
    assert str(caught.value) == cli_error(oxprof_bin, "inspect", tmp_path)


def test_unknown_and_uncomputed_tools(oxprof_bin):
    profile = oxprof.open(fixture("jax_train"))
    with pytest.raises(oxprof.UnknownTool) as caught:
        profile.tool("nope")
    assert isinstance(caught.value, LookupError)
    assert str(caught.value).startswith('unknown tool "nope"; the tools are trace_viewer@, overview_page, ')
    # clap prints the parser's message inside its own usage error.
    done = run_cli(oxprof_bin, "data", "nope", fixture("jax_train"), check=False)
    assert done.returncode == 2 and str(caught.value) in done.stderr


def test_unknown_run_and_host(oxprof_bin):
    profile = oxprof.open(fixture("jax_train"))
    with pytest.raises(oxprof.UnknownRun) as caught:
        profile.tool("overview_page", run="nope")
    assert str(caught.value) == cli_error(oxprof_bin, "data", "overview_page", fixture("jax_train"), "--run", "nope")
    with pytest.raises(oxprof.UnknownHost) as caught:
        profile.tool("framework_op_stats", host="nope")
    assert str(caught.value) == cli_error(
        oxprof_bin, "data", "framework_op_stats", fixture("jax_train"), "--host", "nope"
    )


def test_a_profile_past_the_size_budget(oxprof_bin):
    # Without the persistent cache: an analysis found there is answered without reading the
    # file, so without meeting its budget.
    profile = oxprof.open(fixture("jax_train"), max_profile_bytes=1000, persistent_cache=False)
    with pytest.raises(oxprof.LimitExceeded) as caught:
        profile.tool("overview_page")
    assert "max-profile-bytes" in str(caught.value)
    assert str(caught.value) == cli_error(
        oxprof_bin, "data", "overview_page", fixture("jax_train"), "--max-profile-bytes", "1000"
    )


@pytest.mark.parametrize("contents", [b"\x00garbage" * 64, gzip.compress(b"\x00garbage" * 64)[:40]])
def test_a_corrupt_profile(oxprof_bin, tmp_path, contents):
    suffix = ".xplane.pb.gz" if contents[:2] == b"\x1f\x8b" else ".xplane.pb"
    path = tmp_path / f"vm{suffix}"
    path.write_bytes(contents)
    with pytest.raises(oxprof.InvalidProfile) as caught:
        oxprof.open(path).tool("overview_page")
    assert str(caught.value) == cli_error(oxprof_bin, "data", "overview_page", path)


def test_a_bad_parameter(oxprof_bin):
    profile = oxprof.open(fixture("jax_train"))
    with pytest.raises(oxprof.BadParameter) as caught:
        profile.tool("graph_viewer", module_name="nope")
    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == cli_error(
        oxprof_bin, "data", "graph_viewer", fixture("jax_train"), "--param", "module_name=nope"
    )



def test_serve_and_diff_fail_with_the_clis_lines(oxprof_bin, tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(oxprof.ProfileNotFound) as caught:
        oxprof.serve(missing)
    assert str(caught.value) == cli_error(oxprof_bin, "serve", missing, "--port", "0")
    with pytest.raises(oxprof.ProfileNotFound) as caught:
        oxprof.diff(missing, fixture("jax_train"))
    assert str(caught.value) == cli_error(oxprof_bin, "diff", missing, fixture("jax_train"))


def test_secrets_in_a_url_are_in_no_exception(oxprof_bin):
    # A loopback port nothing listens on: the connection is refused, nothing leaves the
    # machine.
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    url = f"http://alice:s3cret@127.0.0.1:{port}/logs/h.xplane.pb?sig=t0ken&X-Amz-Signature=f00"
    with pytest.raises(oxprof.Error) as caught:
        oxprof.open(url).tool("overview_page")
    message = str(caught.value)
    for secret in ("s3cret", "t0ken", "f00"):
        assert secret not in message, message
    assert f"127.0.0.1:{port}/logs/h.xplane.pb" in message
    assert message == cli_error(oxprof_bin, "data", "overview_page", url)
