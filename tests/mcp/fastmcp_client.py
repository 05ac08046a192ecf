"""A second real client: fastmcp 4.1.6's, run by test_fastmcp.py in a virtualenv of its own (fastmcp pins
its own dependencies); it drives `nexus mcp --ifc` and prints what it saw as JSON. Not a test module."""
from __future__ import annotations

import asyncio
import json
import sys
from typing import Any


async def drive(config: dict[str, Any]) -> dict[str, Any]:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    asked: list[str] = []

    async def elicit(message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
        asked.append(message)
        return {"keep": True}

    transport = StdioTransport(command=config["python"], args=["-m", "cloud.cli", "mcp", *config["args"]],
                               env=config["env"], cwd=config["cwd"])
    async with Client(transport, mode=config["mode"], elicitation_handler=elicit if config["elicit"] else None,
                      timeout=300, init_timeout=120) as client:
        result = await client.call_tool("execute_task_automation", {"code": config["code"]}, raise_on_error=False)
        texts = [c.text for c in result.content if getattr(c, "type", "") == "text"]
        return {"asked": asked, "protocol": client.protocol_version, "structured": result.structured_content,
                "texts": texts, "is_error": result.is_error}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(drive(json.loads(sys.stdin.read())))))
