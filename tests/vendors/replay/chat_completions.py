"""Replay server speaking OpenAI-compatible Chat Completions streaming at `POST /v1/chat/completions`.

Data-only SSE (`data: {chat.completion.chunk}` frames, no `event:` lines) ending in `data: [DONE]`,
as Ollama, vLLM and llama.cpp send it. The server's dialect is set per instance:

    ChatCompletionsReplay(cache=None, *, reasoning_field="reasoning" | "reasoning_content",
                          whole_tool_calls=False)   # True: Ollama-style, each call in one chunk

Scenario items (base.Turn): thinking -> `delta.<reasoning_field>` pieces; text -> `delta.content`
pieces; tool_call -> `delta.tool_calls` fragments keyed by `index`, id/type/name only in the first
(or the whole call in one fragment). The finish reason is "tool_calls" when the turn calls a tool,
else "stop"; Turn.stop overrides it (e.g. "length", or "stop" on a tool turn as some servers do).
With `stream_options.include_usage` a final chunk with `choices: []` carries the usage, billed
through the prefix cache (implicit caching over tools then each message).

Faults (Turn.fault), after `fault_after` content deltas:
    "error_event"   a `data: {"error": {...}}` frame (the SDK raises APIError without a status)
    "truncate"      the connection drops mid-body
    "end_early"     the body ends cleanly with [DONE] but no finish_reason
The error payload is `error_body` (a retryable 500 unless a test changes it).
"""
from __future__ import annotations

import hashlib
import itertools
import json
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

ERROR_TYPES = {429: "rate_limit_error", 500: "server_error", 502: "server_error", 503: "server_error"}


def segments_of(body: dict[str, Any]) -> list[str]:
    """The request in prefix order (tools, then each message), as the cache sees it."""
    head = [json.dumps(body.get("tools") or [], sort_keys=True)]
    return head + [json.dumps(message, sort_keys=True) for message in body.get("messages") or []]


class ChatCompletionsReplay(ReplayServer):
    def __init__(self, cache: PrefixCache | None = None, *, reasoning_field: str = "reasoning",
                 whole_tool_calls: bool = False):
        super().__init__(cache)
        self.reasoning_field = reasoning_field
        self.whole_tool_calls = whole_tool_calls
        self.error_body: dict[str, Any] = {"message": "upstream model crashed", "type": "server_error", "code": 500}
        self._ids = itertools.count(1)

    def render_error(self, request: RecordedRequest, error: HttpError) -> Reply:
        body = {"error": {"message": error.message, "type": error.error_type or ERROR_TYPES.get(error.status, "error"),
                          "param": None, "code": None}}
        headers = {"content-type": "application/json"}
        if error.retry_after is not None:
            headers["retry-after"] = f"{error.retry_after:g}"
        return Reply(error.status, headers, [json.dumps(body).encode()])

    def render_turn(self, request: RecordedRequest, turn: Turn) -> Reply:
        body = request.json or {}
        n = next(self._ids)
        frames: list[bytes] = []
        envelope = {"id": f"chatcmpl-{n:04d}", "object": "chat.completion.chunk", "created": 1_760_000_000,
                    "model": body.get("model", "local-model"), "system_fingerprint": "fp_replay"}
        content_events = 0
        fault_frame: int | None = None
        output_chars = reasoning_chars = 0

        def emit(delta: dict[str, Any], finish_reason: str | None = None, counts: bool = True) -> None:
            nonlocal content_events, fault_frame
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            frames.append(sse({**envelope, "choices": [choice]}))
            if counts:
                content_events += 1
                if content_events == turn.fault_after and fault_frame is None:
                    fault_frame = len(frames)

        emit({"role": "assistant", "content": ""}, counts=False)
        calls = 0
        for position, item in enumerate(turn.items):
            if "thinking" in item:
                for piece in pieces(item["thinking"], turn.piece_chars):
                    emit({self.reasoning_field: piece})
                reasoning_chars += len(item["thinking"])
            elif "text" in item:
                for piece in pieces(item["text"], turn.piece_chars):
                    emit({"content": piece})
                output_chars += len(item["text"])
            elif "tool_call" in item:
                call = item["tool_call"]
                arguments = call["raw_json"] if "raw_json" in call else json.dumps(call.get("input", {}))
                call_id = item.get("id") or "call_" + hashlib.sha256(f"{n}:{position}".encode()).hexdigest()[:20]
                head = {"index": calls, "id": call_id, "type": "function",
                        "function": {"name": call["name"], "arguments": arguments if self.whole_tool_calls else ""}}
                emit({"tool_calls": [head]})
                if not self.whole_tool_calls:
                    for piece in pieces(arguments, turn.piece_chars):
                        emit({"tool_calls": [{"index": calls, "function": {"arguments": piece}}]})
                output_chars += len(arguments)
                calls += 1
        finish = turn.stop or ("tool_calls" if calls else "stop")
        if turn.fault in ("error_event", "truncate", "end_early"):
            at = fault_frame if fault_frame is not None else len(frames)
            del frames[at:]
            if turn.fault == "error_event":
                frames.append(sse({"error": self.error_body}))
            elif turn.fault == "truncate":
                return Reply(200, {"content-type": "text/event-stream"}, frames, truncate_after=at)
            frames.append(sse("[DONE]"))
            return Reply(200, {"content-type": "text/event-stream"}, frames)
        if turn.fault:
            raise ValueError(f"unknown fault {turn.fault!r}")
        emit({}, finish_reason=finish, counts=False)
        if (body.get("stream_options") or {}).get("include_usage"):
            frames.append(sse({**envelope, "choices": [], "usage": self._usage(body, output_chars, reasoning_chars)}))
        frames.append(sse("[DONE]"))
        return Reply(200, {"content-type": "text/event-stream"}, frames)

    def _usage(self, body: dict[str, Any], output_chars: int, reasoning_chars: int) -> dict[str, Any]:
        bill = self.cache.bill(segments_of(body))
        output = (output_chars + reasoning_chars + 3) // 4
        return {"prompt_tokens": bill.total, "completion_tokens": output, "total_tokens": bill.total + output,
                "prompt_tokens_details": {"cached_tokens": bill.cache_read},
                "completion_tokens_details": {"reasoning_tokens": (reasoning_chars + 3) // 4}}
