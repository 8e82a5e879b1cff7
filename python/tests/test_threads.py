"""Decoding and analysis run with the GIL released: other Python threads run meanwhile,
and several threads may ask for tools at once."""

from __future__ import annotations

import threading
import time

import oxprof
from conftest import fixture


def test_other_threads_run_while_a_tool_is_computed():
    # Nothing is kept between calls, so each call decodes and analyses the file again.
    profile = oxprof.open(fixture("tf_keras_fit"), cache_bytes=0, persistent_cache=False)
    state = {"call": 0, "inside": False, "stop": False}

    def work():
        while not state["stop"]:
            state["call"] += 1
            state["inside"] = True
            profile.tool("framework_op_stats")
            state["inside"] = False

    worker = threading.Thread(target=work)
    worker.start()
    # With the GIL held for a whole call this thread could look at most once per call while
    # the worker is inside it (in the few bytecodes before the call starts); released, it
    # looks many times during one call.
    most_looks_in_one_call, looks, last_call = 0, 0, None
    try:
        for _ in range(20000):
            call, inside = state["call"], state["inside"]
            looks = looks + 1 if inside and call == last_call else (1 if inside else 0)
            last_call = call
            most_looks_in_one_call = max(most_looks_in_one_call, looks)
            if most_looks_in_one_call >= 3:
                break
            time.sleep(0.0005)
    finally:
        state["stop"] = True
        worker.join(timeout=120)
    assert most_looks_in_one_call >= 3


def test_threads_can_ask_for_tools_at_once():
    profile = oxprof.open(fixture("tf_custom_loop"))
    results, errors = {}, []

    def ask(tool):
        try:
            results[tool] = profile.tool(tool).xprof_body
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    tools = ["overview_page", "framework_op_stats", "input_pipeline_analyzer", "op_profile"] * 2
    threads = [threading.Thread(target=ask, args=(t,)) for t in tools]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and set(results) == set(tools)
    for tool in set(tools):
        assert results[tool] == profile.tool(tool).xprof_body
