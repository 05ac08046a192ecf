"""The chat API's per-user quotas on the deployment's MCP endpoint, with the official client: concurrent
runs (a delegated run counts with the chat page's, and is listed among them), sessions per hour, and the
requests per minute in the same window as the user's API requests. Over quota: a tool error naming the
quota and its limit."""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import requests
from mcp.shared.exceptions import MCPError

from cloud.child_host import start_ifc_host
from cloud.mcp.http import start_mcp_http
from tests.mcp.support import http_session, text_of
from tests.support.server import RunningServer, running_server

LIMITS = {"quota_concurrent_runs": 1, "quota_sessions_per_hour": 3, "quota_requests_per_minute": 12}


@pytest.fixture
def deployment(tmp_path, scripts_dir) -> Iterator[tuple[RunningServer, str, Path]]:
    """An orchestrator with tight quotas, its MCP endpoint, and an IFC host of alice's."""
    from ifc_host.sample import write_sample_model

    with running_server(tmp_path, **LIMITS) as server:
        endpoint = start_mcp_http(server.state)
        model = tmp_path / "alice.ifc"
        write_sample_model(str(model), storeys=1)
        host = start_ifc_host(str(model), server.url, server.state.store.create_token("alice", scope="host"),
                              str(tmp_path / "alice-out.ifc"))
        try:
            server.wait_for_host("alice", timeout=60)
            yield server, endpoint.url, scripts_dir
        finally:
            host.stop()
            endpoint.shutdown()


def _over(result, quota: str, limit: int) -> None:
    assert result.is_error, text_of(result)
    assert f"{quota} (limit {limit})" in text_of(result), text_of(result)
    assert result.structured_content["quota"] == quota and result.structured_content["limit"] == limit


def test_a_second_delegated_run_is_refused_while_the_first_runs(deployment):
    server, url, scripts = deployment
    store, token = server.state.store, server.token("alice")
    api = {"Authorization": f"Bearer {token}"}
    script = scripts / "held.json"
    script.write_text(json.dumps({"turns": [
        [{"tool_call": {"name": "execute_task_automation",
                        "input": {"code": "model.by_type('IfcDoor')[0].Name = 'HELD'"}}}],
        [{"text": "done"}]]}))
    task = {"prompt": "rename", "model": f"scripted:{script}"}
    store.set_user_policy("alice", "ask")  # the first run's change is held: the run stays in progress

    async def scenario():
        async with http_session(url, token) as session:
            first = await session.call_tool("run_task", {**task, "wait_s": 0})
            handle = first.structured_content["handle"]
            while not server.state.channel.awaiting_decision(handle):
                await anyio.sleep(0.05)
            sessions = len(store.list_sessions(user_name="alice"))
            second = await session.call_tool("run_task", task)
            refused_session = len(store.list_sessions(user_name="alice")) - sessions
            listed = await anyio.to_thread.run_sync(
                lambda: requests.get(f"{server.url}/api/runs", headers=api, timeout=10).json()["runs"])
            call = server.state.channel.pending_tool_call(handle)
            decided = await anyio.to_thread.run_sync(lambda: requests.post(
                f"{server.url}/api/sessions/{handle}/approval", json={"tool_call_id": call, "decision": "discard"},
                headers=api, timeout=10).status_code)
            ended = await session.call_tool("get_run", {"handle": handle, "wait_s": 60})
            store.set_user_policy("alice", "auto")
            third = await session.call_tool("run_task", {**task, "wait_s": 60})
            return first, second, refused_session, listed, decided, ended, third

    try:
        first, second, refused_session, listed, decided, ended, third = anyio.run(scenario)
    finally:
        store.set_user_policy("alice", "auto")
    assert first.structured_content["status"] == "running"
    _over(second, "concurrent runs", 1)
    assert refused_session == 0  # refused before anything was created
    assert [r["session_id"] for r in listed] == [first.structured_content["handle"]]  # a run like the page's
    assert decided == 202
    assert ended.structured_content["status"] == "complete", text_of(ended)
    assert third.structured_content["status"] == "complete", text_of(third)
    assert len(third.structured_content["committed"]) == 1
    audit = [json.loads(row["code"])["tool"] for row in store.audit(kind="mcp_call", user_name="alice")]
    assert audit.count("run_task") == 3  # the refused call too


def test_sessions_per_hour_and_requests_per_minute(deployment):
    server, url, _ = deployment
    store = server.state.store
    for _ in range(LIMITS["quota_sessions_per_hour"]):
        store.create_session("carol", None, None, {})

    async def carol():
        async with http_session(url, server.token("carol")) as session:
            return await session.call_tool("run_task", {"prompt": "hi", "model": "scripted:none.json"})

    _over(anyio.run(carol), "sessions per hour", LIMITS["quota_sessions_per_hour"])

    # One window for the API and MCP: API requests up to one under the limit, then MCP calls.
    token = server.token("dave")
    limit = LIMITS["quota_requests_per_minute"]
    started = time.monotonic()
    for _ in range(limit - 1):
        assert requests.get(f"{server.url}/api/hosts", headers={"Authorization": f"Bearer {token}"},
                            timeout=10).status_code == 200

    async def dave():
        async with http_session(url, token) as session:
            last, over = await session.call_tool("list_hosts", {}), await session.call_tool("list_hosts", {})
            try:
                await session.read_resource("nexus://context")
            except MCPError as exc:  # a read over quota is an error of the read, not a block saying so
                return last, over, exc
            raise AssertionError("the read over quota succeeded")

    last, over, context = anyio.run(dave)
    after = requests.get(f"{server.url}/api/hosts", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    if time.monotonic() - started < 55:  # all within the minute's window (else the window moved on)
        assert not last.is_error and last.structured_content["hosts"] == []
        _over(over, "requests per minute", limit)
        assert f"requests per minute (limit {limit})" in context.error.message
        assert after.status_code == 429
