"""Two orchestrator instances on one PostgreSQL and one Redis (test-started): hosts connected to instance A
are listed and driven through instance B's MCP endpoint, with the official client; another user sees none."""
from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import anyio
import ifcopenshell
import pytest

from cloud.child_host import start_ifc_host
from cloud.distributed.hosts import RedisHostDirectory
from cloud.mcp.http import start_mcp_http
from tests.mcp.support import http_session, text_of
from tests.scale.servers import fresh_database, postgres_server, redis_server
from tests.support.server import RunningServer, running_server


@pytest.fixture(scope="module")
def instances(tmp_path_factory) -> Iterator[tuple[RunningServer, RunningServer, str, str, Path]]:
    """A and B; alice's IFC host on A; B's MCP endpoint. Yields (a, b, endpoint url, host_id, out file)."""
    from ifc_host.sample import write_sample_model

    tmp_path = tmp_path_factory.mktemp("two_instances")
    with ExitStack() as stack:
        monkeypatch = stack.enter_context(pytest.MonkeyPatch.context())
        redis = stack.enter_context(redis_server(tmp_path / "redis"))
        database = fresh_database(stack.enter_context(postgres_server()))
        monkeypatch.setenv("NEXUS_REDIS_URL", redis.url)
        a = stack.enter_context(running_server(tmp_path, db_path=database))
        b = stack.enter_context(running_server(tmp_path, db_path=database))
        assert isinstance(b.state.hosts, RedisHostDirectory)
        endpoint = start_mcp_http(b.state)
        stack.callback(endpoint.shutdown)
        model, out = tmp_path / "alice.ifc", tmp_path / "alice-out.ifc"
        write_sample_model(str(model), storeys=1)
        host = start_ifc_host(str(model), a.url, a.state.store.create_token("alice", scope="host"), str(out))
        stack.callback(host.stop)
        host_id = a.wait_for_host("alice", timeout=60)
        assert b.state.hosts.get_local(host_id) is None  # the websocket is A's
        yield a, b, endpoint.url, host_id, out


def test_a_host_on_instance_a_is_listed_and_driven_through_b(instances, scripts_dir):
    a, b, url, host_id, out = instances
    script = scripts_dir / "rename.json"
    script.write_text(json.dumps({"turns": [
        [{"tool_call": {"name": "execute_task_automation",
                        "input": {"code": "model.by_type('IfcDoor')[1].Name = 'VIA-B-RUN'"}}}],
        [{"text": "Renamed."}]]}))

    async def alice():
        async with http_session(url, b.token("alice")) as session:
            listed = await session.call_tool("list_hosts", {})
            collected = await session.call_tool("execute_data_collection",
                                                {"code": "print(len(model.by_type('IfcDoor')))", "host": host_id})
            automated = await session.call_tool("execute_task_automation",
                                                {"code": "model.by_type('IfcDoor')[0].Name = 'VIA-B'"})
            context = await session.read_resource("nexus://context")
            delegated = await session.call_tool("run_task", {"prompt": "rename", "model": f"scripted:{script}",
                                                             "wait_s": 120})
            return listed, collected, automated, context, delegated

    async def bob():
        async with http_session(url, b.token("bob")) as session:
            return (await session.call_tool("list_hosts", {}),
                    await session.call_tool("execute_data_collection", {"code": "print(1)", "host": host_id}))

    listed, collected, automated, context, delegated = anyio.run(alice)
    assert [h["host_id"] for h in listed.structured_content["hosts"]] == [host_id]
    assert listed.structured_content["hosts"][0]["host_app"] == "ifc"
    assert not collected.is_error, text_of(collected)
    assert collected.structured_content["stdout"].strip().isdigit()
    assert automated.structured_content["committed"] is True, text_of(automated)
    block = context.contents[0].text
    assert "Document: NexusAI Sample Office" in block and "Level 1" in block, block
    assert delegated.structured_content["status"] == "complete", text_of(delegated)
    names = {d.Name for d in ifcopenshell.open(str(out)).by_type("IfcDoor")}
    assert {"VIA-B", "VIA-B-RUN"} <= names
    others, refused = anyio.run(bob)
    assert others.structured_content["hosts"] == []
    assert refused.is_error and host_id in text_of(refused)


def test_a_held_change_on_a_host_of_instance_a_is_decided_through_bs_elicitation(instances):
    import mcp_types as types

    a, b, url, host_id, out = instances
    b.state.store.set_user_policy("alice", "ask")
    asked: list[str] = []

    async def keep(context, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"keep": True})

    async def alice():
        async with http_session(url, b.token("alice"), elicitation_callback=keep) as session:
            return await session.call_tool("execute_task_automation",
                                           {"code": "model.by_type('IfcDoor')[2].Name = 'KEPT-VIA-B'"})

    try:
        kept = anyio.run(alice)
    finally:
        b.state.store.set_user_policy("alice", "auto")
    assert len(asked) == 1 and "KEPT-VIA-B" in asked[0]
    assert kept.structured_content["committed"] is True, text_of(kept)
    assert kept.structured_content["decision"]["decision"] == "keep"
    assert "KEPT-VIA-B" in {d.Name for d in ifcopenshell.open(str(out)).by_type("IfcDoor")}
