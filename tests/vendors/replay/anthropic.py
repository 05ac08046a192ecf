"""Anthropic Messages wire format: SSE with `event:` lines, errors as {"type": "error", "error": {...}},
prompt caching billed by the explicit-breakpoint simulation (cache_control blocks are the breakpoints)."""
from __future__ import annotations

import json
import uuid
from typing import Any

from tests.vendors.replay.base import (
    HttpError,
    PrefixCache,
    RecordedRequest,
    ReplayServer,
    Reply,
    Turn,
    pieces,
    sse,
)

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
               529: "overloaded_error"}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def request_segments(body: dict[str, Any]) -> tuple[list[str], list[int]]:
    """The request in prefix order (tools, system, message blocks), without cache_control, and the
    indices of the blocks that carried a breakpoint."""
    segments: list[str] = []
    breakpoints: list[int] = []

    def add(block: Any, prefix: str = "") -> None:
        if isinstance(block, dict) and "cache_control" in block:
            breakpoints.append(len(segments))
            block = {k: v for k, v in block.items() if k != "cache_control"}
        segments.append(prefix + _canonical(block))

    for tool in body.get("tools") or []:
        add(tool)
    system = body.get("system")
    for block in ([{"type": "text", "text": system}] if isinstance(system, str) else system or []):
        add(block)
    for message in body.get("messages", []):
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for i, block in enumerate(blocks):
            add(block, message["role"] + ":" if i == 0 else "")
    return segments, breakpoints


class AnthropicReplay(ReplayServer):
    def __init__(self, cache: PrefixCache | None = None):
        super().__init__(cache)

    def render_error(self, request: RecordedRequest, error: HttpError) -> Reply:
        headers = {"content-type": "application/json", "request-id": "req_" + uuid.uuid4().hex[:12]}
        if error.retry_after is not None:
            headers["retry-after"] = f"{error.retry_after:g}"
        kind = error.error_type or ERROR_TYPES.get(error.status, "api_error")
        body = {"type": "error", "error": {"type": kind, "message": error.message}}
        return Reply(error.status, headers, [json.dumps(body).encode()])

    def render_turn(self, request: RecordedRequest, turn: Turn) -> Reply:
        if request.path != "/v1/messages":
            return self.render_error(request, HttpError(404, f"no route {request.path}"))
        body = request.json
        bill = self.cache.bill(*request_segments(body))
        usage = {"input_tokens": bill.uncached, "cache_creation_input_tokens": bill.cache_write,
                 "cache_read_input_tokens": bill.cache_read}
        frames = [sse({"type": "message_start", "message": {
            "id": "msg_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant", "model": body["model"],
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}},
            "message_start")]
        content_events: list[int] = []  # frame indices of content deltas, for fault placement
        output_chars = 0
        has_tool = False
        for index, item in enumerate(turn.items):
            kind = next(k for k in item if k in ("text", "thinking", "redacted_thinking", "tool_call"))
            if kind == "text":
                block: dict[str, Any] = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": p} for p in pieces(item["text"], turn.piece_chars)]
                output_chars += len(item["text"])
            elif kind == "thinking":
                block = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces(item["thinking"], turn.piece_chars)]
                deltas.append({"type": "signature_delta", "signature": item.get("signature", "sig-" + str(index))})
                output_chars += len(item["thinking"])
            elif kind == "redacted_thinking":
                block, deltas = {"type": "redacted_thinking", "data": item["redacted_thinking"]}, []
            else:
                call = item["tool_call"]
                has_tool = True
                raw = call["raw_json"] if "raw_json" in call else json.dumps(call.get("input", {}))
                block = {"type": "tool_use", "id": call.get("id") or "toolu_" + uuid.uuid4().hex[:20],
                         "name": call["name"], "input": {}}
                deltas = [{"type": "input_json_delta", "partial_json": ""}]
                deltas += [{"type": "input_json_delta", "partial_json": p} for p in pieces(raw, turn.piece_chars)]
                output_chars += len(raw)
            frames.append(sse({"type": "content_block_start", "index": index, "content_block": block},
                              "content_block_start"))
            for delta in deltas:
                content_events.append(len(frames))
                frames.append(sse({"type": "content_block_delta", "index": index, "delta": delta},
                                  "content_block_delta"))
            frames.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
            if index == 0:
                frames.append(sse({"type": "ping"}, "ping"))
        stop = turn.stop or ("tool_use" if has_tool else "end_turn")
        frames.append(sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {**usage, "output_tokens": max(1, (output_chars + 3) // 4)}}, "message_delta"))
        frames.append(sse({"type": "message_stop"}, "message_stop"))
        return self._with_fault(turn, frames, content_events)

    @staticmethod
    def _with_fault(turn: Turn, frames: list[bytes], content_events: list[int]) -> Reply:
        headers = {"content-type": "text/event-stream", "cache-control": "no-cache"}
        if turn.fault is None:
            return Reply(200, headers, frames)
        cut = content_events[min(turn.fault_after, len(content_events) - 1)] if content_events else 1
        if turn.fault == "truncate":
            return Reply(200, headers, frames, truncate_after=cut)
        if turn.fault == "error_event":
            error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            return Reply(200, headers, [*frames[:cut], sse(error, "error")])
        raise ValueError(f"unknown fault {turn.fault!r}")
