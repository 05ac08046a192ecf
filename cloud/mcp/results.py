"""What an MCP tool call returns: structured content within the model's cap, its JSON as the text content,
and the output schema each tool's structured content follows.

A client may hand either part to its model, so both carry the same capped copy: a script run's output,
change report and traceback are cut as the loop cuts them for its own model (render_for_model, the same
caps), and its `summary` (the loop's model text, which repeats them) is left out. The whole, uncapped
result stays in the store: `full_result` names the session and tool call, readable at
GET /api/sessions/<session_id>/results/<tool_call_id> and shown in the chat page's session.
"""
from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

from cloud.config import Settings
from cloud.tools.render import render_for_model
from shared_contract import SCHEMA_DIR

TRACEBACK_CHARS = 4000  # as the loop's model copy (render.describe_run)


def capped_copy(person: dict[str, Any], session_id: str, settings: Settings) -> dict[str, Any]:
    """The person's result as a client's model may read it."""
    out = copy.deepcopy(person)
    capped: list[str] = []
    if "mode" in out:  # a script run: its bulky fields capped, the text that repeats them left out
        out.pop("summary", None)
        for key in ("stdout", "change_report"):
            value = out.get(key)
            if value:
                cut = render_for_model(value, settings.max_result_chars,
                                       host_cut=key == "stdout" and bool(out.get("stdout_truncated")))
                if cut != value:
                    out[key] = cut
                    capped.append(key)
        error = out.get("error")
        if isinstance(error, dict) and error.get("traceback"):
            cut = render_for_model(error["traceback"], TRACEBACK_CHARS)
            if cut != error["traceback"]:
                error["traceback"] = cut
                capped.append("error.traceback")
        if out.get("change_details") is not None and \
                len(json.dumps(out["change_details"])) > settings.max_result_chars:
            out["change_details"] = None
            capped.append("change_details")
    out["capped"] = capped
    out["full_result"] = {"session_id": session_id, "tool_call_id": out["tool_call_id"],
                          "path": f"/api/sessions/{session_id}/results/{out['tool_call_id']}"}
    return out


def as_text(structured: dict[str, Any]) -> str:
    return json.dumps(structured, ensure_ascii=False, indent=1)


REFUSAL: dict[str, Any] = {
    "type": "object",
    "description": "The call could not go ahead (no such host, over quota, the host could not start...).",
    "properties": {"ok": {"const": False}, "error": {"type": "string"}, "quota": {"type": "string"},
                   "limit": {"type": "number"}, "retry_after_s": {"type": "number"}},
    "required": ["ok", "error"], "additionalProperties": False}

RUN: dict[str, Any] = {
    "type": "object",
    "description": "A delegated run: its status, steps so far, final answer and the person's tool results.",
    "properties": {"handle": {"type": "string"},
                   "status": {"enum": ["running", "complete", "error", "cancelled"]},
                   "steps": {"type": "array", "items": {"type": "string"}},
                   "answer": {"type": "string"}, "error": {"type": ["string", "null"]},
                   "committed": {"type": "array", "items": {"type": "string"}},
                   "results": {"type": "array", "items": {"type": "object"}},
                   "note": {"type": "string", "description": "what to do next while the run goes on"}},
    "required": ["handle", "status", "steps", "answer", "error", "committed", "results"],
    "additionalProperties": False}

HOSTS: dict[str, Any] = {
    "type": "object",
    "properties": {"hosts": {"type": "array", "items": {
        "type": "object",
        "properties": {"host_id": {"type": "string"}, "host_app": {"type": "string"},
                       "host_version": {"type": ["string", "null"]}, "document": {"type": ["object", "null"]},
                       "display_name": {"type": ["string", "null"]}},
        "required": ["host_id", "host_app"]}}},
    "required": ["hosts"], "additionalProperties": False}


@cache
def loop_result_schema() -> dict[str, Any]:
    """A loop tool's capped result: the contract's tool result (shared_contract/tool_result.json) with
    `summary` optional, plus `capped` and `full_result`."""
    contract = json.loads((SCHEMA_DIR / "tool_result.json").read_text(encoding="utf-8"))
    properties = {k: v for k, v in contract["properties"].items()}
    properties.update({k: v for k, v in contract["$defs"]["script_run"]["properties"].items() if v is not True})
    properties["capped"] = {"type": "array", "items": {"type": "string"},
                            "description": "fields cut to the model's cap; the whole is at full_result"}
    properties["full_result"] = {
        "type": "object", "description": "where the whole, uncapped result is kept",
        "properties": {"session_id": {"type": "string"}, "tool_call_id": {"type": "string"},
                       "path": {"type": "string"}},
        "required": ["session_id", "tool_call_id", "path"]}
    properties["held"] = {"type": "boolean", "description": "the change is held open until a person decides"}
    properties["review_status"] = {"enum": ["pending", "running", "kept", "discarded"],
                                   "description": "the review of a held change (running: the call has not ended)"}
    properties["decide_at"] = {"type": "string", "description": "the chat page where a person keeps or discards it"}
    properties["note"] = {"type": "string", "description": "what to do next"}
    properties["idempotency_key"] = {"type": "string", "description": "a retry with this key returns this outcome"}
    properties["repeated"] = {"type": "boolean", "description": "the outcome of an earlier call with the same key"}
    return {"type": "object", "properties": properties, "required": ["tool_call_id", "name", "ok"],
            "additionalProperties": False}


def output_schema(tool: str) -> dict[str, Any]:
    """The output schema of one of the server's tools: its result, or a refusal."""
    own = {"list_hosts": HOSTS, "run_task": RUN, "get_run": RUN}
    return {"type": "object", "anyOf": [own.get(tool) or loop_result_schema(), REFUSAL]}
