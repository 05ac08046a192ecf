"""An MCP tool whose input and output schemas are given (the shared contract's, results.py's, the review card's),
not derived from a function signature as the SDK's tools are."""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import func_metadata
from mcp_types import ToolAnnotations
from pydantic import Field


class GivenTool(Tool):
    handler: Any = Field(exclude=True)
    result_schema: dict[str, Any] = Field(exclude=True)

    @property
    def output_schema(self) -> dict[str, Any]:  # type: ignore[override]
        return self.result_schema

    async def run(self, arguments: dict[str, Any], context: Context, convert_result: bool = False) -> Any:
        return await self.handler(arguments, context)


async def _placeholder() -> None:
    """Only for the function metadata the SDK's Tool requires; GivenTool.run never calls it."""


def given_tool(name: str, description: str, input_schema: dict[str, Any], output_schema: dict[str, Any],
               handler: Callable[[dict[str, Any], Context], Awaitable[Any]], annotations: dict[str, Any],
               meta: dict[str, Any] | None) -> GivenTool:
    return GivenTool(fn=_placeholder, name=name, description=description, parameters=input_schema,
                     fn_metadata=func_metadata(_placeholder, structured_output=False), is_async=True,
                     handler=handler, result_schema=output_schema,
                     annotations=ToolAnnotations.model_validate(annotations), meta=meta)
