"""The canonical tool definitions ({name, description, input_schema}, from cloud.contract.tool_definitions)
translated into each vendor's dialect. Tools are declared once, in shared_contract/; this is the only
place that knows how each vendor spells a tool.

API (stable; each returns fresh JSON-ready dicts in the input order, so callers may annotate them,
e.g. add cache_control, and identical input gives byte-identical output: prompt caches keep hitting):

    anthropic_tools(tools)            -> [{"name", "description", "input_schema"}]
    responses_tools(tools)            -> [{"type": "function", "name", "description", "parameters", "strict": False}]
    chat_completions_tools(tools)     -> [{"type": "function", "function": {"name", "description", "parameters"}}]
    gemini_function_declarations(tools) -> [{"name", "description", "parameters_json_schema"}]
        (keyword arguments for google.genai.types.FunctionDeclaration)
"""
from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

ToolDefinition = dict[str, Any]

# Keys that describe a schema document rather than the parameters; no vendor wants them.
DOCUMENT_KEYS = ("$schema", "$id", "title")


def _parameters(tool: ToolDefinition) -> dict[str, Any]:
    schema = copy.deepcopy(tool["input_schema"])
    for key in DOCUMENT_KEYS:
        schema.pop(key, None)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def anthropic_tools(tools: Iterable[ToolDefinition]) -> list[dict[str, Any]]:
    return [{"name": t["name"], "description": t["description"], "input_schema": _parameters(t)} for t in tools]


def responses_tools(tools: Iterable[ToolDefinition]) -> list[dict[str, Any]]:
    # strict mode would require every property to be required; our tools have optional ones.
    return [{"type": "function", "name": t["name"], "description": t["description"],
             "parameters": _parameters(t), "strict": False} for t in tools]


def chat_completions_tools(tools: Iterable[ToolDefinition]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                              "parameters": _parameters(t)}} for t in tools]


def gemini_function_declarations(tools: Iterable[ToolDefinition]) -> list[dict[str, Any]]:
    return [{"name": t["name"], "description": t["description"], "parameters_json_schema": _parameters(t)}
            for t in tools]
