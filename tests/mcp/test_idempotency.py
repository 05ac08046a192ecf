"""Issue 22's MCP retry: a call that changes the model carries an idempotency key (the client's, or one the
server issues and tells); a retry with the same key returns the first call's outcome and never runs again,
also from a new server process on the same database. `nexus mcp --ifc`, the official client, a real IFC host."""
from __future__ import annotations

from pathlib import Path

import anyio
import ifcopenshell
import pytest

from tests.mcp.support import stdio_session, text_of

APPEND = "door = model.by_type('IfcDoor')[0]\ndoor.Name = (door.Name or '') + '+'\n"


@pytest.fixture(scope="module")
def sample_ifc(tmp_path_factory) -> Path:
    from ifc_host.sample import write_sample_model

    path = tmp_path_factory.mktemp("mcp_idem") / "sample.ifc"
    write_sample_model(str(path), storeys=1)
    return path


def _first_door(path: Path) -> str:
    return ifcopenshell.open(str(path)).by_type("IfcDoor")[0].Name or ""


def test_a_retried_key_returns_the_first_outcome_without_a_second_commit(sample_ifc, tmp_path):
    out, db = tmp_path / "out.ifc", tmp_path / "db.sqlite"
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async def first_process():
        async with stdio_session("--ifc", str(sample_ifc), "--out", str(out), "--db", str(db)) as session:
            first = await session.call_tool("execute_task_automation", {"code": APPEND, "idempotency_key": "k-1"})
            again = await session.call_tool("execute_task_automation", {"code": APPEND, "idempotency_key": "k-1"})
            issued = await session.call_tool("execute_task_automation", {"code": APPEND},
                                             progress_callback=on_progress)
            key = issued.structured_content["idempotency_key"]
            by_issued = await session.call_tool("execute_task_automation", {"code": APPEND, "idempotency_key": key})
            other = await session.call_tool("execute_task_automation", {"code": APPEND, "idempotency_key": "k-2"})
            return first, again, issued, by_issued, other

    first, again, issued, by_issued, other = anyio.run(first_process)
    name = _first_door(out)
    assert first.structured_content["committed"] is True, text_of(first)
    assert again.structured_content["tool_call_id"] == first.structured_content["tool_call_id"]
    assert again.structured_content["repeated"] is True and again.structured_content["committed"] is True
    assert issued.structured_content["idempotency_key"] == issued.structured_content["tool_call_id"]
    assert any(issued.structured_content["idempotency_key"] in m for m in progress), progress
    assert by_issued.structured_content["tool_call_id"] == issued.structured_content["tool_call_id"]
    assert other.structured_content["tool_call_id"] != first.structured_content["tool_call_id"]
    assert name.endswith("+++") and not name.endswith("++++"), name  # k-1, the issued key, k-2: three commits
    saved = out.read_bytes()

    async def second_process():  # the server restarted: the store remembers what ran under k-1
        async with stdio_session("--ifc", str(sample_ifc), "--out", str(out), "--db", str(db)) as session:
            return await session.call_tool("execute_task_automation", {"code": APPEND, "idempotency_key": "k-1"})

    after_restart = anyio.run(second_process)
    assert after_restart.structured_content["tool_call_id"] == first.structured_content["tool_call_id"]
    assert after_restart.structured_content["repeated"] is True
    assert after_restart.structured_content["committed"] is True, text_of(after_restart)
    assert out.read_bytes() == saved  # nothing ran again
