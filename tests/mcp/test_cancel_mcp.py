"""Issue 22, item 1 over MCP: a client that cancels a call (the official client sends notifications/cancelled
when it abandons a request) aborts it on the host. The script is killed and rolled back, nothing is saved
to the output file, and the host serves the client's next call at once. Real IFC host process, the
deployment's streamable HTTP endpoint, the official mcp client."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import requests

from cloud.child_host import start_ifc_host
from cloud.mcp.http import start_mcp_http
from tests.mcp.support import http_session
from tests.support.server import RunningServer, running_server

SLEEP_THEN_RENAME = ("import time\ntime.sleep(15)\n"
                     "for door in model.by_type('IfcDoor'):\n    door.Name = 'Cancelled over MCP'\n")


@pytest.fixture
def deployment(tmp_path) -> Iterator[tuple[RunningServer, str, str, Path, Path]]:
    from ifc_host.sample import write_sample_model

    model, out = tmp_path / "alice.ifc", tmp_path / "alice-out.ifc"
    write_sample_model(str(model), storeys=1)
    with running_server(tmp_path, tool_timeout_s=120.0, script_timeout_s=60.0) as server:
        endpoint = start_mcp_http(server.state)
        host = start_ifc_host(str(model), server.url, server.state.store.create_token("alice", scope="host"),
                              str(out))
        try:
            yield server, endpoint.url, server.wait_for_host("alice", timeout=60), model, out
        finally:
            host.stop()
            endpoint.shutdown()


def _activity(server: RunningServer, host_id: str) -> str:
    hosts = requests.get(f"{server.url}/api/hosts", headers={"Authorization": f"Bearer {server.token('alice')}"},
                         timeout=10).json()["hosts"]
    return next(h["activity"]["state"] for h in hosts if h["host_id"] == host_id)


def test_a_cancelled_mcp_call_is_aborted_on_the_host_and_the_next_call_is_served(deployment):
    server, url, host_id, model, out = deployment
    before = model.read_bytes()

    async def scenario() -> tuple[float, float, object]:
        async with http_session(url, server.token("alice")) as session:
            await session.call_tool("execute_data_collection", {"code": "print(1)"})  # warm: the host forks once
            with anyio.move_on_after(2.5):  # the client gives up: notifications/cancelled
                await session.call_tool("execute_task_automation", {"code": SLEEP_THEN_RENAME})
                raise AssertionError("the call was not cancelled")
            cancelled_at = time.monotonic()
            while await anyio.to_thread.run_sync(_activity, server, host_id) != "idle":
                assert time.monotonic() - cancelled_at < 10, "the host stayed busy"
                await anyio.sleep(0.02)
            to_idle = time.monotonic() - cancelled_at
            result = await session.call_tool("execute_data_collection",
                                             {"code": "print(len(model.by_type('IfcDoor')))"})
            return to_idle, time.monotonic() - cancelled_at, result

    to_idle, to_next, result = anyio.run(scenario)
    assert not result.is_error and result.structured_content["stdout"].strip().isdigit(), result
    assert to_idle < 2.0 and to_next < 2.0, (to_idle, to_next)
    store = server.state.store
    (session,) = store.list_sessions(user_name="alice")
    assert _saved_result_says_cancelled(store, session["id"])
    assert model.read_bytes() == before and not out.exists()


def _saved_result_says_cancelled(store, session_id: str) -> bool:
    """The person's copy of the cancelled call's result, as the store keeps it."""
    for row in store.audit(session_id=session_id, kind="mcp_call"):
        result = store.get_result(session_id, row["tool_call_id"])
        if result and "cancelled while running: rolled back" in str(result):
            return True
    return False
