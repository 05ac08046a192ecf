"""The neutral transcript rebuilt as an Anthropic Messages request, with prompt-cache breakpoints.

Breakpoints (at most 4): the last tool, the system prompt, the trailing message, and the message that
was trailing on the previous turn (so a turn that adds more than the ~20-block lookback still hits).
Nothing that changes per turn sits above them. Opaque state: thinking signatures and redacted thinking
go back verbatim; another vendor's state is ignored, and thinking without Anthropic state is dropped.
"""
from __future__ import annotations

import re
from typing import Any

from cloud.transcript import Entry
from cloud.vendors.images import scale_for
from cloud.vendors.tool_schemas import anthropic_tools

VENDOR = "anthropic"
EPHEMERAL = {"type": "ephemeral"}
TOOL_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
MIN_THINKING_BUDGET = 1024
MAX_THINKING_BUDGET = 16000


def safe_tool_id(tool_id: str) -> str:
    """Anthropic accepts [a-zA-Z0-9_-] ids; ids minted by other vendors are mapped the same way everywhere."""
    return TOOL_ID_UNSAFE.sub("_", tool_id or "call")[:64]


def _own_state(part: dict[str, Any]) -> dict[str, Any] | None:
    state = part.get("vendor_state")
    return state if isinstance(state, dict) and state.get("vendor") == VENDOR else None


def _image_block(part: dict[str, Any], model: str) -> dict[str, Any]:
    scaled = scale_for(VENDOR, model, part)
    return {"type": "image", "source": {"type": "base64", "media_type": scaled["media_type"], "data": scaled["data"]}}


def _user_blocks(entry: Entry, model: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in entry.get("content", []):
        if part.get("type") == "text" and part.get("text"):
            blocks.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "image":
            blocks.append(_image_block(part, model))
    return blocks


def _assistant_blocks(entry: Entry) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in entry.get("content", []):
        kind = part.get("type")
        if kind == "thinking":
            state = _own_state(part)
            if state and state.get("redacted_data"):
                blocks.append({"type": "redacted_thinking", "data": state["redacted_data"]})
            elif state and state.get("signature"):
                blocks.append({"type": "thinking", "thinking": part.get("text", ""), "signature": state["signature"]})
        elif kind == "text" and part.get("text"):
            blocks.append({"type": "text", "text": part["text"]})
        elif kind == "tool_call":
            arguments = part.get("input") if isinstance(part.get("input"), dict) else {}
            blocks.append({"type": "tool_use", "id": safe_tool_id(part["id"]), "name": part["name"], "input": arguments})
    return blocks


def _tool_result_blocks(entry: Entry, model: str) -> list[dict[str, Any]]:
    blocks = []
    for result in entry.get("content", []):
        if result.get("type") != "tool_result":
            continue
        content: list[dict[str, Any]] = []
        for part in result.get("content", []):
            if part.get("type") == "text" and part.get("text"):
                content.append({"type": "text", "text": part["text"]})
            elif part.get("type") == "image":
                content.append(_image_block(part, model))  # images ride inside the tool result
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": safe_tool_id(result["tool_call_id"]),
                                 "content": content or [{"type": "text", "text": "(no output)"}]}
        if result.get("is_error"):
            block["is_error"] = True
        blocks.append(block)
    return blocks


def build_messages(view: list[Entry], model: str) -> list[dict[str, Any]]:
    """Alternating user/assistant messages; consecutive entries of the same side are merged."""
    messages: list[dict[str, Any]] = []
    for entry in view:
        role = entry.get("role")
        if role == "user":
            side, blocks = "user", _user_blocks(entry, model)
        elif role == "tool":
            side, blocks = "user", _tool_result_blocks(entry, model)
        elif role == "assistant":
            side, blocks = "assistant", _assistant_blocks(entry)
        else:
            continue
        if not blocks:
            continue
        if messages and messages[-1]["role"] == side:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": side, "content": blocks})
    return messages


def _mark_last_cacheable(message: dict[str, Any]) -> None:
    for block in reversed(message["content"]):
        if block["type"] not in ("thinking", "redacted_thinking"):  # these cannot carry cache_control
            block["cache_control"] = EPHEMERAL
            return


def _mark_cache_breakpoints(messages: list[dict[str, Any]]) -> None:
    if not messages:
        return
    _mark_last_cacheable(messages[-1])
    # The user message that was trailing on the previous request: two messages back.
    if len(messages) >= 3 and messages[-3]["role"] == "user":
        _mark_last_cacheable(messages[-3])


def _tool_loop_without_signed_thinking(messages: list[dict[str, Any]]) -> bool:
    """Thinking requires the assistant messages of the current tool loop to open with signed thinking;
    a loop started by another vendor has none, so such a request goes without thinking."""
    for message in reversed(messages):
        blocks = message["content"]
        if message["role"] == "user":
            if not any(b["type"] == "tool_result" for b in blocks):
                return False
            continue
        has_tool_use = any(b["type"] == "tool_use" for b in blocks)
        if has_tool_use and blocks[0]["type"] not in ("thinking", "redacted_thinking"):
            return True
    return False


def thinking_config(mode: str, max_tokens: int) -> dict[str, Any] | None:
    if mode == "adaptive":
        return {"type": "adaptive", "display": "summarized"}  # the person watches the reasoning
    if mode == "budget" and max_tokens > 2 * MIN_THINKING_BUDGET:
        return {"type": "enabled", "budget_tokens": max(MIN_THINKING_BUDGET, min(MAX_THINKING_BUDGET, max_tokens // 2))}
    return None


def build_request(model: str, system: str, tools: tuple[dict[str, Any], ...], view: list[Entry], max_tokens: int,
                  thinking_mode: str) -> dict[str, Any]:
    messages = build_messages(view, model)
    _mark_cache_breakpoints(messages)
    kwargs: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": messages}
    if system:
        kwargs["system"] = [{"type": "text", "text": system, "cache_control": EPHEMERAL}]
    if tools:
        declared = anthropic_tools(tools)
        declared[-1]["cache_control"] = EPHEMERAL
        kwargs["tools"] = declared
    thinking = None if _tool_loop_without_signed_thinking(messages) else thinking_config(thinking_mode, max_tokens)
    if thinking:
        kwargs["thinking"] = thinking
    return kwargs
