"""Running one tool call: validate its arguments, check for a host, and hand it to its handler.

Every outcome, including refusals and caps, is a normal tool result: the model reads it and decides.
The person gets the full result as a `tool_result` Metadata chunk; the model gets a capped copy.
"""
from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from cloud.chunks import Chunk
from cloud.contract import ContractError, validate_tool_input
from cloud.prompts import message
from cloud.tools.automation import execute_task_automation
from cloud.tools.base import Called, ToolContext, ToolOutput, plain, with_person
from cloud.tools.capture import capture_view
from cloud.tools.lookup import lookup_api
from cloud.tools.scripts import ScriptRun, run_script
from cloud.tools.skills import find_skill, run_skill

Handler = Callable[[ToolContext, dict[str, Any], dict[str, Any]], ToolOutput]


def execute_data_collection(ctx: ToolContext, call: dict[str, Any], arguments: dict[str, Any]) -> ToolOutput:
    return (yield from run_script(ctx, call, ScriptRun(arguments["code"], "collect")))


HANDLERS: dict[str, Handler] = {
    "execute_data_collection": execute_data_collection,
    "execute_task_automation": execute_task_automation,
    "capture_view": capture_view,
    "lookup_api": lookup_api,
    "find_skill": find_skill,
    "run_skill": run_skill,
}


def execute_tool(ctx: ToolContext, call: dict[str, Any]) -> Generator[Chunk, None, Called]:
    """Every door's way to run a tool call: its chunks, then both copies of its result."""
    return (yield from with_person(_dispatch(ctx, call)))


def _dispatch(ctx: ToolContext, call: dict[str, Any]) -> ToolOutput:
    if call.get("input_error"):
        return (yield from plain(call, message("invalid_json", detail=call["input_error"])))
    try:
        arguments = validate_tool_input(call["name"], call.get("input"))
    except ContractError as exc:
        return (yield from plain(call, message("invalid_input", detail=exc)))
    if ctx.host is None or not ctx.host.connected():
        return (yield from plain(call, message("no_host")))
    return (yield from HANDLERS[call["name"]](ctx, call, arguments))
