"""`get_run` after the server restarted: the run is rebuilt from its session in the store: every turn's text
(separated), a step per tool call and result, the committed changes and the person's results. `nexus mcp
--ifc` over stdio with the official client, a scripted model, a real IFC host."""
from __future__ import annotations

import json

import anyio

from tests.mcp.support import stdio_session, text_of


def test_get_run_after_a_restart_has_every_turn_step_and_commit(tmp_path):
    from ifc_host.sample import write_sample_model

    model, out, db = tmp_path / "m.ifc", tmp_path / "out.ifc", tmp_path / "db.sqlite"
    write_sample_model(str(model), storeys=1)
    script = tmp_path / "turns.json"
    script.write_text(json.dumps({"turns": [
        [{"text": "First I look."}, {"tool_call": {"name": "execute_data_collection", "input": {"code": "print(1)"}}}],
        [{"text": "Now I rename."},
         {"tool_call": {"name": "execute_task_automation",
                        "input": {"code": "model.by_type('IfcDoor')[0].Name = 'AFTER-RESTART'"}}}],
        [{"text": "Done."}]]}))
    args = ("--ifc", str(model), "--out", str(out), "--db", str(db))

    async def run():
        async with stdio_session(*args) as session:
            return await session.call_tool("run_task", {"prompt": "rename", "model": f"scripted:{script}"})

    async def later(handle: str):
        async with stdio_session(*args) as session:
            return await session.call_tool("get_run", {"handle": handle})

    live = anyio.run(run).structured_content
    assert live["status"] == "complete", live
    after = anyio.run(later, live["handle"])
    stored = after.structured_content
    assert not after.is_error, text_of(after)
    assert stored["status"] == "complete"
    assert stored["answer"] == "First I look.\n\nNow I rename.\n\nDone." == live["answer"]
    assert stored["committed"] == live["committed"] and len(stored["committed"]) == 1
    assert stored["steps"] == ["tool call: execute_data_collection", "execute_data_collection: ok",
                               "tool call: execute_task_automation", "execute_task_automation: ok, committed"]
    assert [r["tool_call_id"] for r in stored["results"]] == [r["tool_call_id"] for r in live["results"]]
