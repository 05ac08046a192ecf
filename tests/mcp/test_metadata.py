"""Honest tool metadata over stdio (`nexus mcp --ifc`, the official client): annotations on every tool, an
output schema that every tool's structured content follows (checked with jsonschema, besides the client's
own check), and text content that is the structured content's JSON, both within the model's cap."""
from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path
from typing import TextIO

import anyio
import jsonschema
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from cloud.config import Settings
from tests.mcp.support import nexus_mcp_params, text_of

READ_ONLY = {"execute_data_collection", "capture_view", "lookup_api", "list_hosts", "find_skill", "get_run",
             "review_status"}
DESTRUCTIVE = {"execute_task_automation", "run_skill", "run_task"}
BIG_OUTPUT = "for i in range(1600):\n    print('row %04d ' % i + 'x' * 24)\n"  # 48,000 characters


@pytest.fixture(scope="module")
def sample_ifc(tmp_path_factory) -> Path:
    from ifc_host.sample import write_sample_model

    path = tmp_path_factory.mktemp("mcp_meta") / "sample.ifc"
    write_sample_model(str(path), storeys=1)
    return path


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_every_tool_is_annotated_and_its_structured_content_follows_its_output_schema(era, sample_ifc, tmp_path):
    script = tmp_path / "done.json"
    script.write_text(json.dumps({"turns": [[{"text": "Nothing to do."}]]}))

    async def scenario():
        async with _session(era, "--ifc", str(sample_ifc), "--out", str(tmp_path / "out.ifc"),
                            "--db", str(tmp_path / "db.sqlite"), errlog=sys.stderr) as session:
            tools = (await session.list_tools()).tools
            calls = {
                "execute_data_collection": {"code": BIG_OUTPUT},
                "execute_task_automation": {"code": "model.by_type('IfcDoor')[0].Name = 'META'"},
                "capture_view": {},
                "lookup_api": {"query": "by_type"},
                "find_skill": {"query": "rename doors"},
                "run_skill": {"name": "no such skill"},
                "list_hosts": {},
                "run_task": {"prompt": "nothing", "model": f"scripted:{script}"},
            }
            results = {name: await session.call_tool(name, arguments) for name, arguments in calls.items()}
            results["get_run"] = await session.call_tool(
                "get_run", {"handle": results["run_task"].structured_content["handle"]})
            results["review_status"] = await session.call_tool(
                "review_status", {"tool_call_id": results["execute_task_automation"].structured_content["tool_call_id"]})
            refused = await session.call_tool("execute_data_collection", {"code": "print(1)", "host": "h_nothere"})
            return tools, results, refused

    tools, results, refused = anyio.run(scenario)
    by_name = {t.name: t for t in tools}
    assert set(results) == set(by_name)
    for name, tool in by_name.items():
        hints = tool.annotations
        assert hints is not None and hints.title, name
        assert hints.read_only_hint is (name in READ_ONLY), name
        if name in DESTRUCTIVE:
            assert hints.destructive_hint is True and hints.idempotent_hint is False, name
        assert hints.open_world_hint is (name == "run_task"), name  # run_task calls a model vendor
        assert tool.output_schema and tool.output_schema["type"] == "object", name
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
        result = results[name]
        jsonschema.validate(result.structured_content, tool.output_schema)
        # the text a client's model reads is the structured content itself
        assert json.loads(text_of(result)) == result.structured_content, name
    jsonschema.validate(refused.structured_content, by_name["execute_data_collection"].output_schema)
    assert refused.is_error and json.loads(text_of(refused)) == refused.structured_content

    big = results["execute_data_collection"].structured_content
    cap = Settings().max_result_chars
    assert len(text_of(results["execute_data_collection"])) < cap + 2000  # was: 11.5k text, 24k structured
    assert big["capped"] == ["stdout"] and "capped" in big["stdout"] and len(big["stdout"]) <= cap + 500
    assert big["stdout"].startswith("row 0000") and "row 1599" in big["stdout"]  # head and tail kept
    assert big["full_result"]["path"] == f"/api/sessions/{big['full_result']['session_id']}/results/" \
                                         f"{big['tool_call_id']}"
    assert results["execute_task_automation"].structured_content["committed"] is True
    assert results["review_status"].structured_content["committed"] is True  # the same call's outcome, later
    assert results["execute_task_automation"].structured_content["idempotency_key"]  # issued by the server
    assert results["capture_view"].structured_content["image"]["width"] > 0
    assert [c.type for c in results["capture_view"].content] == ["text", "image"]


@asynccontextmanager
async def _session(era: str, *args: str, errlog: TextIO) -> AsyncIterator[ClientSession]:
    """The official client on `nexus mcp`, by handshake (2025-11-25) or by discovery (2026-07-28)."""
    async with stdio_client(nexus_mcp_params(*args), errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            if era == "handshake":
                await session.initialize()
            else:
                await _discover(session)
            yield session


async def _discover(session: ClientSession, tries: int = 6) -> None:
    """The SDK's discover probe gives up after 10 s, which a loaded machine can spend starting Python: a
    probe that timed out while the server was still starting is sent again."""
    for attempt in range(tries):
        try:
            await session.discover()
            return
        except MCPError as exc:
            if exc.error.code != types.REQUEST_TIMEOUT or attempt == tries - 1:
                raise


async def _error_code(call: Awaitable[object]) -> tuple[int, str]:
    try:
        await call
    except MCPError as exc:
        return exc.error.code, exc.error.message
    raise AssertionError("the request succeeded")


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_protocol_details_under_both_protocol_versions(era, sample_ifc, tmp_path):
    script = tmp_path / "turns.json"
    script.write_text(json.dumps({"turns": [
        [{"text": "First I count the doors."},
         {"tool_call": {"name": "execute_data_collection", "input": {"code": "print(1)"}}}],
        [{"text": "There is one."}]]}))
    errlog = tmp_path / "stderr.txt"

    async def scenario():
        with errlog.open("w") as err:
            async with _session(era, "--ifc", str(sample_ifc), "--db", str(tmp_path / "db.sqlite"),
                                errlog=err) as session:
                info = session.server_info
                unknown = await _error_code(session.get_prompt("nope", {}))
                missing = await _error_code(session.get_prompt("renumber", {"category": "doors"}))
                listed = (await session.list_prompts()).prompts
                tools = {t.name: t for t in (await session.list_tools()).tools}
                hosts = await session.call_tool("list_hosts", {})
                no_host = await _error_code(session.read_resource("nexus://hosts/h_nothere/context"))
                category = await session.complete(types.PromptReference(name="renumber"),
                                                  {"name": "category", "value": "d"})
                host_ids = await session.complete(
                    types.ResourceTemplateReference(uri="nexus://hosts/{host_id}/context"),
                    {"name": "host_id", "value": ""})
                ran = await session.call_tool("run_task", {"prompt": "count", "model": f"scripted:{script}"})
                return info, unknown, missing, listed, tools, hosts, no_host, category, host_ids, ran

    info, unknown, missing, listed, tools, hosts, no_host, category, host_ids, ran = anyio.run(scenario)
    assert info is not None and info.version == metadata.version("nexusai")
    assert unknown[0] == -32602 and "nope" in unknown[1]
    assert missing[0] == -32602 and "scheme" in missing[1]
    assert no_host[0] == -32602 and "h_nothere" in no_host[1]
    assert "Traceback" not in errlog.read_text()
    assert all(arg.description for prompt in listed for arg in prompt.arguments or []), listed
    assert tools["run_task"].input_schema["properties"]["host"]["description"]
    assert category.completion.values == ["doors"]
    assert host_ids.completion.values == [h["host_id"] for h in hosts.structured_content["hosts"]]
    assert ran.structured_content["answer"] == "First I count the doors.\n\nThere is one.", ran.structured_content
