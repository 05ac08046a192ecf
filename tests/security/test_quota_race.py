"""Issue 23, M4: the concurrent-runs quota is counted and taken in one step. 40 runs started at the same
moment against a limit of 8 (chat messages over real HTTP; MCP run_task calls) start exactly 8; the others
are refused with 429 / the quota's tool error, and the slots come back when the runs end."""
from __future__ import annotations

import pytest

from cloud.mcp.http import start_mcp_http
from cloud.web.quotas import run_slots
from tests.support.client import Client, write_script
from tests.support.quota_race import (
    LIMIT,
    PARALLEL,
    SETTINGS,
    cancel_all,
    post_messages_at_once,
    run_tasks_at_once,
)
from tests.support.server import running_server
from tests.support.spine import collect, say, wait_until
from tests.support.test_host import TestHost


@pytest.fixture
def limited(tmp_path, scripts_dir):
    with running_server(tmp_path, **SETTINGS) as srv:
        yield srv


def test_forty_chat_messages_at_once_start_exactly_the_limit(limited, scripts_dir):
    alice = Client(limited.url, limited.token("alice"))
    host = TestHost(limited.ws_url, alice.token, silent=True).start()
    try:
        spec = write_script(scripts_dir / "hang.json", [collect("print(1)"), say("done")])
        sessions = [alice.new_session(host.host_id, spec) for _ in range(PARALLEL)]
        statuses = post_messages_at_once([(alice, s) for s in sessions])
        assert sorted(statuses) == [200] * LIMIT + [429] * (PARALLEL - LIMIT), statuses
        running = [r["session_id"] for r in alice.call("GET", "/api/runs").json()["runs"]]
        assert len(running) == LIMIT
        assert run_slots(limited.state.runs).used("alice") == LIMIT
        cancel_all(alice, running)
        wait_until(lambda: run_slots(limited.state.runs).used("alice") == 0, timeout=30)  # released at the end
        assert post_messages_at_once([(alice, sessions[-1])]) == [200]
        cancel_all(alice, [sessions[-1]])
    finally:
        host.stop()


def test_forty_mcp_run_tasks_at_once_start_exactly_the_limit(limited, scripts_dir):
    token = limited.token("alice")
    host = TestHost(limited.ws_url, token, silent=True).start()
    endpoint = start_mcp_http(limited.state)
    try:
        limited.wait_for_host("alice")
        spec = write_script(scripts_dir / "hang.json", [collect("print(1)"), say("done")])
        results = run_tasks_at_once(endpoint.url, token, {"prompt": "go", "model": spec}, PARALLEL)
        started = [r for r in results if not r.is_error]
        refused = [r for r in results if r.is_error]
        assert len(started) == LIMIT and len(refused) == PARALLEL - LIMIT, [r.structured_content for r in results]
        assert all(r.structured_content["quota"] == "concurrent runs" for r in refused)
        alice = Client(limited.url, token)
        cancel_all(alice, [r.structured_content["handle"] for r in started])
        wait_until(lambda: run_slots(limited.state.runs).used("alice") == 0, timeout=30)
    finally:
        endpoint.shutdown()
        host.stop()
