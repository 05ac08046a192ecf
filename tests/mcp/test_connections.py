"""One MCP session per connection (the transport's session, never the client's self-reported name), and the
audit log naming the real client and its version, also through the stdio bridge. Two connections of the
official SDK's client (which calls itself "mcp", as fastmcp does) to the HTTP endpoint, a real IFC host."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import ifcopenshell
import mcp_types as types
import pytest

from cloud.child_host import start_ifc_host
from cloud.mcp.http import start_mcp_http
from tests.mcp.support import http_session, stdio_session, text_of
from tests.support.server import RunningServer, running_server


@pytest.fixture(scope="module")
def deployment(tmp_path_factory) -> Iterator[tuple[RunningServer, str, Path]]:
    from ifc_host.sample import write_sample_model

    tmp = tmp_path_factory.mktemp("mcp_connections")
    with running_server(tmp) as server:
        endpoint = start_mcp_http(server.state)
        model, out = tmp / "carol.ifc", tmp / "carol-out.ifc"
        write_sample_model(str(model), storeys=1)
        host = start_ifc_host(str(model), server.url, server.state.store.create_token("carol", scope="host"), str(out))
        try:
            server.wait_for_host("carol", timeout=60)
            yield server, endpoint.url, out
        finally:
            host.stop()
            endpoint.shutdown()


def _mcp_sessions(server: RunningServer) -> list[dict]:
    return [row for row in server.state.store.list_sessions(user_name="carol") if row["model"].startswith("mcp:")]


def test_two_connections_of_one_client_program_get_separate_sessions(deployment):
    server, url, out = deployment
    store = server.state.store
    token = server.token("carol")
    before = {row["id"] for row in _mcp_sessions(server)}

    async def scenario():
        async with http_session(url, token) as a, http_session(url, token) as b:
            a_ran = await a.call_tool("execute_task_automation", {"code": "model.by_type('IfcDoor')[0].Name = 'A-1'"})
            b_ran = await b.call_tool("execute_task_automation", {"code": "model.by_type('IfcDoor')[1].Name = 'B-1'"})
            # anchored edits apply to the script *this* connection last ran, not the other's
            a_edit = await a.call_tool("execute_task_automation", {"edits": [{"old": "'A-1'", "new": "'A-2'"}]})
            b_edit = await b.call_tool("execute_task_automation", {"edits": [{"old": "'A-1'", "new": "'B-X'"}]})
            sessions = [row for row in _mcp_sessions(server) if row["id"] not in before]
            a_session = next(row["id"] for row in sessions if any(
                json.loads(r["code"])["tool"] == "execute_task_automation"
                    and "A-1" in json.loads(r["code"])["arguments"].get("code", "")  # A's own script, not B's edit
                for r in store.audit(session_id=row["id"], kind="mcp_call")))
            store.update_session(a_session, policy="readonly")  # the person restricts A's session only
            b_after = await b.call_tool("execute_task_automation",
                                        {"code": "model.by_type('IfcDoor')[1].Name = 'B-3'"})
            a_after = await a.call_tool("execute_task_automation",
                                        {"code": "model.by_type('IfcDoor')[0].Name = 'A-3'"})
            return sessions, a_ran, b_ran, a_edit, b_edit, b_after, a_after

    sessions, a_ran, b_ran, a_edit, b_edit, b_after, a_after = anyio.run(scenario)
    assert len(sessions) == 2, sessions
    assert all(r.structured_content["committed"] for r in (a_ran, b_ran)), text_of(b_ran)
    assert a_edit.structured_content["committed"] is True, text_of(a_edit)
    assert b_edit.is_error and "old text was not found" in text_of(b_edit)  # B's script has no 'A-1'
    assert b_after.structured_content["committed"] is True, text_of(b_after)
    assert a_after.is_error and not a_after.structured_content.get("committed")
    assert "read-only" in text_of(a_after).lower() or "readonly" in text_of(a_after).lower(), text_of(a_after)
    names = [d.Name for d in ifcopenshell.open(str(out)).by_type("IfcDoor")]
    assert names[0] == "A-2" and names[1] == "B-3"


def test_the_audit_names_the_client_and_its_version_directly_and_through_the_bridge(deployment, tmp_path):
    server, url, _ = deployment
    store = server.state.store
    token_file = tmp_path / "token"
    token_file.write_text(server.token("carol"))

    async def direct():
        async with http_session(url, token_file.read_text(),
                                client_info=types.Implementation(name="probe-direct", version="3.1.4")) as session:
            return await session.call_tool("execute_data_collection", {"code": "print('direct')"})

    async def bridged():
        async with stdio_session("--server", url, "--token-file", str(token_file),
                                 client_info=types.Implementation(name="probe-bridged", version="2.7.1")) as session:
            return await session.call_tool("execute_data_collection", {"code": "print('bridged')"})

    assert not anyio.run(direct).is_error
    assert not anyio.run(bridged).is_error
    audit = [json.loads(row["code"]) for row in store.audit(kind="mcp_call", user_name="carol")]
    clients = {(c["client"], c.get("client_version")) for c in audit if c["tool"] == "execute_data_collection"}
    assert {("probe-direct", "3.1.4"), ("probe-bridged", "2.7.1")} <= clients, clients
    models = {row["model"] for row in _mcp_sessions(server)}
    assert {"mcp:probe-direct", "mcp:probe-bridged"} <= models


def test_the_capped_result_names_where_the_whole_is_and_the_person_reads_it_there(deployment):
    import requests

    server, url, _ = deployment
    token = server.token("carol")
    code = "for i in range(1600):\n    print('row %04d ' % i + 'y' * 24)\n"  # 48,000 characters

    async def scenario():
        async with http_session(url, token) as session:
            return await session.call_tool("execute_data_collection", {"code": code})

    result = anyio.run(scenario)
    capped = result.structured_content
    assert capped["capped"] == ["stdout"] and len(capped["stdout"]) < 24_000
    assert json.loads(text_of(result)) == capped
    whole = requests.get(server.url + capped["full_result"]["path"], headers={"Authorization": f"Bearer {token}"},
                         timeout=10)
    assert whole.status_code == 200, whole.text
    assert len(whole.json()["stdout"]) == 1600 * 34 and whole.json()["summary"]
    other = requests.get(server.url + capped["full_result"]["path"],
                         headers={"Authorization": f"Bearer {server.token('dave')}"}, timeout=10)
    assert other.status_code in (403, 404)  # another user's result stays theirs
