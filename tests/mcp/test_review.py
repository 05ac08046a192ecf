"""The reviewer through MCP (`nexus mcp --ifc --policy ask`): the person decides through elicitation;
accept keeps, decline discards, no answer in time discards; `readonly` refuses automations."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import ifcopenshell
import mcp_types as types
import pytest

from tests.mcp.support import stdio_session, text_of

RENAME = "model.by_type('IfcDoor')[0].Name = '{name}'\n"


@pytest.fixture(scope="module")
def sample_ifc(tmp_path_factory) -> Path:
    from ifc_host.sample import write_sample_model

    path = tmp_path_factory.mktemp("mcp_review") / "sample.ifc"
    write_sample_model(str(path), storeys=1)
    return path


def _door_names(path: Path) -> set[str]:
    return {d.Name for d in ifcopenshell.open(str(path)).by_type("IfcDoor")} if path.exists() else set()


def test_elicitation_accept_commits_and_decline_discards(sample_ifc, tmp_path):
    out = tmp_path / "out.ifc"
    asked: list[str] = []
    answers = iter([types.ElicitResult(action="accept", content={"keep": True}),
                    types.ElicitResult(action="decline")])

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return next(answers)

    async def scenario():
        async with stdio_session("--ifc", str(sample_ifc), "--out", str(out), "--db", str(tmp_path / "db.sqlite"),
                                 "--policy", "ask", elicitation_callback=elicit) as session:
            kept = await session.call_tool("execute_task_automation", {"code": RENAME.format(name="KEPT")})
            discarded = await session.call_tool("execute_task_automation",
                                                {"code": RENAME.format(name="DISCARDED")})
            return kept, discarded

    kept, discarded = anyio.run(scenario)
    assert len(asked) == 2 and "KEPT" in asked[0]  # the person saw the change report before deciding
    assert kept.structured_content["committed"] is True, text_of(kept)
    assert kept.structured_content["decision"]["decision"] == "keep"
    assert discarded.structured_content["committed"] is False
    assert discarded.structured_content["decision"]["decision"] == "discard"
    names = _door_names(out)
    assert "KEPT" in names and "DISCARDED" not in names


def test_no_answer_in_time_discards(sample_ifc, tmp_path):
    out = tmp_path / "out.ifc"

    async def never(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        await anyio.sleep(30)
        return types.ElicitResult(action="accept", content={"keep": True})

    async def scenario():
        async with stdio_session("--ifc", str(sample_ifc), "--out", str(out), "--db", str(tmp_path / "db.sqlite"),
                                 "--policy", "ask", "--review-timeout", "2", elicitation_callback=never) as session:
            return await session.call_tool("execute_task_automation", {"code": RENAME.format(name="LATE")})

    late = anyio.run(scenario)
    assert late.structured_content["committed"] is False, text_of(late)
    assert late.structured_content["decision"]["decision"] == "discard"
    assert "LATE" not in _door_names(out)


def test_readonly_refuses_automations(sample_ifc, tmp_path):
    async def scenario():
        async with stdio_session("--ifc", str(sample_ifc), "--db", str(tmp_path / "db.sqlite"),
                                 "--policy", "readonly") as session:
            automate = await session.call_tool("execute_task_automation", {"code": RENAME.format(name="NO")})
            collect = await session.call_tool("execute_data_collection", {"code": "print('reading is fine')"})
            return automate, collect

    automate, collect = anyio.run(scenario)
    assert automate.is_error and "read-only" in text_of(automate).lower()
    assert not collect.is_error


def test_a_delegated_run_under_ask_asks_through_elicitation(sample_ifc, tmp_path):
    import json

    out = tmp_path / "out.ifc"
    script = tmp_path / "rename.json"
    script.write_text(json.dumps({"turns": [
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": RENAME.format(name="RUN-KEPT")}}}],
        [{"text": "Renamed."}]]}))
    asked: list[str] = []

    async def accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"keep": True})

    async def scenario():
        async with stdio_session("--ifc", str(sample_ifc), "--out", str(out), "--db", str(tmp_path / "db.sqlite"),
                                 "--policy", "ask", elicitation_callback=accept) as session:
            return await session.call_tool("run_task", {"prompt": "rename", "model": f"scripted:{script}"})

    done = anyio.run(scenario)
    assert done.structured_content["status"] == "complete", text_of(done)
    assert len(asked) == 1 and "RUN-KEPT" in asked[0]
    assert len(done.structured_content["committed"]) == 1
    assert "RUN-KEPT" in _door_names(out)


def test_the_form_defaults_to_discard_and_cancel_is_no_decline(sample_ifc, tmp_path):
    out = tmp_path / "out.ifc"
    schemas: list[dict] = []
    answers = iter([types.ElicitResult(action="accept", content={}),  # the form as it came: keep unchecked
                    types.ElicitResult(action="decline"),
                    types.ElicitResult(action="cancel")])

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        schemas.append(params.requested_schema)
        return next(answers)

    async def scenario():
        async with stdio_session("--ifc", str(sample_ifc), "--out", str(out), "--db", str(tmp_path / "db.sqlite"),
                                 "--policy", "ask", elicitation_callback=elicit) as session:
            return [await session.call_tool("execute_task_automation", {"code": RENAME.format(name=name)})
                    for name in ("AS-IS", "DECLINED", "DISMISSED")]

    as_is, declined, dismissed = anyio.run(scenario)
    assert schemas[0]["properties"]["keep"]["default"] is False
    assert all(r.structured_content["committed"] is False for r in (as_is, declined, dismissed))
    assert not as_is.structured_content["decision"].get("undecided")
    assert declined.structured_content["decision"] == {"decision": "discard", "by": "mcp",
                                                       "comment": "declined through MCP"}
    assert dismissed.structured_content["decision"]["undecided"] is True
    assert "dismissed" in dismissed.structured_content["decision"]["comment"]
    assert not {"AS-IS", "DECLINED", "DISMISSED"} & _door_names(out)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_the_person_is_asked_under_both_protocol_versions(mode, sample_ifc, tmp_path):
    """The official high-level client: under 2025-11-25 the server elicits mid-call; under 2026-07-28 it
    answers with an input_required result carrying the question, and the client calls again with the
    answer (before, `ctx.elicit()` raised NoBackChannelError there and the person was never asked)."""
    from mcp.client import Client

    from tests.mcp.support import nexus_mcp_params

    out = tmp_path / "out.ifc"
    asked: list[str] = []
    answers = iter([types.ElicitResult(action="accept", content={"keep": True, "comment": "fine"}),
                    types.ElicitResult(action="decline")])

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return next(answers)

    async def scenario():
        params = nexus_mcp_params("--ifc", str(sample_ifc), "--out", str(out), "--db", str(tmp_path / "db.sqlite"),
                                  "--policy", "ask", "--review-timeout", "60")
        async with Client(params, mode=mode, elicitation_callback=elicit) as client:
            kept = await client.call_tool("execute_task_automation", {"code": RENAME.format(name="ASKED-KEPT")})
            declined = await client.call_tool("execute_task_automation", {"code": RENAME.format(name="ASKED-NO")})
            return kept, declined

    kept, declined = anyio.run(scenario)
    assert len(asked) == 2 and "ASKED-KEPT" in asked[0] and "ASKED-NO" in asked[1]
    assert kept.structured_content["committed"] is True, text_of(kept)
    assert kept.structured_content["decision"] == {"decision": "keep", "by": "mcp", "comment": "fine"}
    assert kept.structured_content["review_status"] == "kept"
    assert declined.structured_content["committed"] is False
    assert declined.structured_content["review_status"] == "discarded"
    names = _door_names(out)
    assert "ASKED-KEPT" in names and "ASKED-NO" not in names


def test_a_delegated_run_asks_under_2026_07_28(sample_ifc, tmp_path):
    import json

    from mcp.client import Client

    from tests.mcp.support import nexus_mcp_params

    out = tmp_path / "out.ifc"
    script = tmp_path / "rename.json"
    script.write_text(json.dumps({"turns": [
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": RENAME.format(name="MODERN-RUN")}}}],
        [{"text": "Renamed."}]]}))
    asked: list[str] = []

    async def accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"keep": True})

    async def scenario():
        params = nexus_mcp_params("--ifc", str(sample_ifc), "--out", str(out), "--db", str(tmp_path / "db.sqlite"),
                                  "--policy", "ask", "--review-timeout", "60")
        async with Client(params, mode="2026-07-28", elicitation_callback=accept) as client:
            return await client.call_tool("run_task", {"prompt": "rename", "model": f"scripted:{script}"})

    done = anyio.run(scenario)
    assert done.structured_content["status"] == "complete", text_of(done)
    assert len(asked) == 1 and "MODERN-RUN" in asked[0]
    assert len(done.structured_content["committed"]) == 1
    assert "MODERN-RUN" in _door_names(out)
