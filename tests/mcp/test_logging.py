"""The logging capability over stdio (`nexus mcp --ifc`, the official client, protocol 2025-11-25): it is
declared, `logging/setLevel` sets the connection's level, and a delegated run's steps arrive as
`notifications/message` at info (none once the level is error)."""
from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.mcp.support import stdio_session


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # the client's own
def test_run_progress_arrives_as_log_messages_at_the_level_set(tmp_path):
    from ifc_host.sample import write_sample_model

    model = tmp_path / "m.ifc"
    write_sample_model(str(model), storeys=1)
    script = tmp_path / "turns.json"
    script.write_text(json.dumps({"turns": [
        [{"tool_call": {"name": "execute_data_collection", "input": {"code": "print(1)"}}}], [{"text": "One."}]]}))
    logged: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(params)

    async def scenario() -> tuple[Any, int]:
        async with stdio_session("--ifc", str(model), "--db", str(tmp_path / "db.sqlite"),
                                 logging_callback=on_log) as session:
            capabilities = session.initialize_result.capabilities if session.initialize_result else None
            await session.set_logging_level("info")
            await session.call_tool("run_task", {"prompt": "count", "model": f"scripted:{script}"})
            at_info = len(logged)
            await session.set_logging_level("error")
            await session.call_tool("run_task", {"prompt": "count", "model": f"scripted:{script}"})
            return capabilities, at_info

    capabilities, at_info = anyio.run(scenario)
    assert capabilities is not None and capabilities.logging is not None
    texts = [str(p.data) for p in logged]
    assert at_info == len(logged) and at_info >= 2, texts  # nothing more once the level is error
    assert all(p.level == "info" and p.logger == "nexusai" for p in logged)
    assert any("tool call: execute_data_collection" in t for t in texts)
    assert any("execute_data_collection: ok" in t for t in texts)
