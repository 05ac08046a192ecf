"""Replay server speaking the OpenAI Responses streaming wire format at `POST /v1/responses`.

Every event is an `event: TYPE` + `data: JSON` frame carrying a `sequence_number`, in the order the
real API sends them: response.created / in_progress, then per output item `output_item.added`, its
deltas and `.done` events, `output_item.done`, then `response.completed` (or `response.incomplete`
when the turn's `stop` is an incomplete reason such as "max_output_tokens").

Scenario items (see base.Turn): thinking -> a reasoning item with summary deltas and an
`encrypted_content` (the item's `signature` when given, else derived from the text); redacted_thinking
-> a reasoning item with no summary; text -> a message; tool_call -> a function_call item whose
arguments stream as deltas.

Faults (Turn.fault), after `fault_after` content deltas:
    "error_event"   {"type": "error", "code", "message"}: the SDK yields it as an event
    "error_object"  {"type": "error", "error": {...}}: the SDK raises APIError
    "failed"        response.failed with response.error
    "truncate"      the connection drops mid-body
    "end_early"     the body ends cleanly but without a terminal event
The error code is `error_code` ("server_error", retryable, unless a test changes it).

Usage is billed through the prefix cache (implicit caching over tools, instructions, then each input
item), with cached tokens counted inside input_tokens as the real API does.
"""
from __future__ import annotations

import base64
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

INCOMPLETE_REASONS = ("max_output_tokens", "content_filter")
ERROR_TYPES = {429: "requests", 500: "server_error", 502: "server_error", 503: "server_error"}


def _short_hash(*values: Any) -> str:
    return hashlib.sha256(json.dumps(values).encode()).hexdigest()[:24]


def segments_of(body: dict[str, Any]) -> list[str]:
    """The request in prefix order (tools, instructions, input items), as the cache sees it."""
    head = [json.dumps(body.get("tools") or [], sort_keys=True), str(body.get("instructions") or "")]
    items = body.get("input") or []
    if isinstance(items, str):
        items = [items]
    return head + [json.dumps(item, sort_keys=True) for item in items]


class ResponsesStream:
    """Builds one response's frames; `content_events` counts deltas so faults can land mid-stream."""

    def __init__(self, response_id: str, model: str, request: dict[str, Any]):
        self.response_id, self.model, self.request = response_id, model, request
        self.frames: list[bytes] = []
        self.sequence = itertools.count()
        self.output: list[dict[str, Any]] = []
        self.content_events = 0
        self.fault_frame: int | None = None  # frames before the fault point (set once fault_after deltas went out)
        self.output_chars = 0
        self.reasoning_chars = 0

    def emit(self, event_type: str, **fields: Any) -> None:
        data = {"type": event_type, **fields, "sequence_number": next(self.sequence)}
        self.frames.append(sse(data, event=event_type))

    def response(self, status: str, **extra: Any) -> dict[str, Any]:
        body = {
            "id": self.response_id, "object": "response", "created_at": 1_760_000_000, "status": status,
            "model": self.model, "output": list(self.output), "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": self.request.get("tools") or [], "error": None,
            "incomplete_details": None, "instructions": self.request.get("instructions"),
            "max_output_tokens": self.request.get("max_output_tokens"), "store": self.request.get("store", True),
            "prompt_cache_key": self.request.get("prompt_cache_key"), "usage": None,
        }
        body.update(extra)
        return body


class OpenAIResponsesReplay(ReplayServer):
    error_code = "server_error"

    def __init__(self, cache: PrefixCache | None = None):
        super().__init__(cache)
        self._ids = itertools.count(1)
        self.billed: list[dict[str, Any]] = []  # the usage object of every completed response, in order

    # --------------------------------------------------------------- errors before the stream
    def render_error(self, request: RecordedRequest, error: HttpError) -> Reply:
        error_type = error.error_type or ERROR_TYPES.get(error.status, "invalid_request_error")
        code = "rate_limit_exceeded" if error.status == 429 else error_type
        body = {"error": {"message": error.message, "type": error_type, "param": None, "code": code}}
        headers = {"content-type": "application/json", "x-request-id": f"req_{next(self._ids)}"}
        if error.retry_after is not None:
            headers["retry-after"] = f"{error.retry_after:g}"
        return Reply(error.status, headers, [json.dumps(body).encode()])

    # --------------------------------------------------------------- a streamed turn
    def render_turn(self, request: RecordedRequest, turn: Turn) -> Reply:
        body = request.json or {}
        n = next(self._ids)
        stream = ResponsesStream(f"resp_{n:04d}", body.get("model", "gpt-5.1"), body)
        stream.emit("response.created", response=stream.response("in_progress"))
        stream.emit("response.in_progress", response=stream.response("in_progress"))
        for index, item in enumerate(turn.items):
            self._render_item(stream, index, item, turn, n)
        if turn.fault:
            at = stream.fault_frame if stream.fault_frame is not None else len(stream.frames)
            return self._faulted(stream, turn.fault, at)
        usage = self._usage(body, stream)
        if turn.stop in INCOMPLETE_REASONS:
            stream.emit("response.incomplete", response=stream.response(
                "incomplete", incomplete_details={"reason": turn.stop}, usage=usage))
        else:
            stream.emit("response.completed", response=stream.response("completed", usage=usage))
        return Reply(200, {"content-type": "text/event-stream"}, stream.frames)

    def _faulted(self, stream: ResponsesStream, fault: str, at: int) -> Reply:
        del stream.frames[at:]
        message = "The server had an error while processing your request."
        if fault == "error_event":
            stream.emit("error", code=self.error_code, message=message, param=None)
        elif fault == "error_object":
            stream.emit("error", error={"type": self.error_code, "code": self.error_code,
                                        "message": message, "param": None})
        elif fault == "failed":
            stream.emit("response.failed", response=stream.response(
                "failed", error={"code": self.error_code, "message": message}))
        elif fault == "truncate":
            return Reply(200, {"content-type": "text/event-stream"}, stream.frames, truncate_after=at)
        elif fault != "end_early":
            raise ValueError(f"unknown fault {fault!r}")
        return Reply(200, {"content-type": "text/event-stream"}, stream.frames)

    def _usage(self, body: dict[str, Any], stream: ResponsesStream) -> dict[str, Any]:
        bill = self.cache.bill(segments_of(body))
        output = (stream.output_chars + 3) // 4
        reasoning = (stream.reasoning_chars + 3) // 4
        usage = {"input_tokens": bill.total,
                 "input_tokens_details": {"cached_tokens": bill.cache_read, "cache_write_tokens": 0},
                 "output_tokens": output, "output_tokens_details": {"reasoning_tokens": reasoning},
                 "total_tokens": bill.total + output}
        self.billed.append(usage)
        return usage

    def _render_item(self, stream: ResponsesStream, index: int, item: dict[str, Any], turn: Turn, n: int) -> None:
        if "thinking" in item or "redacted_thinking" in item:
            self._reasoning(stream, index, item, turn, n)
        elif "text" in item:
            self._message(stream, index, item["text"], turn, n)
        elif "tool_call" in item:
            self._function_call(stream, index, item, turn, n)
        else:
            raise ValueError(f"unknown scenario item {item!r}")

    def _deltas(self, stream: ResponsesStream, text: str, turn: Turn, emit: Any) -> None:
        for piece in pieces(text, turn.piece_chars):
            emit(piece)
            stream.content_events += 1
            if stream.content_events == turn.fault_after:
                stream.fault_frame = len(stream.frames)

    def _reasoning(self, stream: ResponsesStream, index: int, item: dict[str, Any], turn: Turn, n: int) -> None:
        item_id = f"rs_{n:04d}_{index}"
        text = item.get("thinking", "")
        encrypted = item.get("signature") or item.get("redacted_thinking") or \
            base64.b64encode(f"enc:{_short_hash(text, n, index)}".encode()).decode()
        stream.emit("response.output_item.added", output_index=index,
                    item={"id": item_id, "type": "reasoning", "summary": []})
        summary = []
        if text:
            part = {"type": "summary_text", "text": ""}
            stream.emit("response.reasoning_summary_part.added", item_id=item_id, output_index=index,
                        summary_index=0, part=part)
            self._deltas(stream, text, turn, lambda d: stream.emit(
                "response.reasoning_summary_text.delta", item_id=item_id, output_index=index, summary_index=0,
                delta=d))
            stream.emit("response.reasoning_summary_text.done", item_id=item_id, output_index=index,
                        summary_index=0, text=text)
            stream.emit("response.reasoning_summary_part.done", item_id=item_id, output_index=index,
                        summary_index=0, part={"type": "summary_text", "text": text})
            summary = [{"type": "summary_text", "text": text}]
        done = {"id": item_id, "type": "reasoning", "summary": summary, "encrypted_content": encrypted}
        stream.emit("response.output_item.done", output_index=index, item=done)
        stream.output.append(done)
        stream.output_chars += len(text) + len(encrypted)
        stream.reasoning_chars += len(text) + len(encrypted)

    def _message(self, stream: ResponsesStream, index: int, text: str, turn: Turn, n: int) -> None:
        item_id = f"msg_{n:04d}_{index}"
        stream.emit("response.output_item.added", output_index=index, item={
            "id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []})
        stream.emit("response.content_part.added", item_id=item_id, output_index=index, content_index=0,
                    part={"type": "output_text", "text": "", "annotations": []})
        self._deltas(stream, text, turn, lambda d: stream.emit(
            "response.output_text.delta", item_id=item_id, output_index=index, content_index=0, delta=d,
            logprobs=[]))
        stream.emit("response.output_text.done", item_id=item_id, output_index=index, content_index=0, text=text,
                    logprobs=[])
        part = {"type": "output_text", "text": text, "annotations": []}
        stream.emit("response.content_part.done", item_id=item_id, output_index=index, content_index=0, part=part)
        done = {"id": item_id, "type": "message", "status": "completed", "role": "assistant", "content": [part]}
        stream.emit("response.output_item.done", output_index=index, item=done)
        stream.output.append(done)
        stream.output_chars += len(text)

    def _function_call(self, stream: ResponsesStream, index: int, item: dict[str, Any], turn: Turn, n: int) -> None:
        call = item["tool_call"]
        arguments = call["raw_json"] if "raw_json" in call else json.dumps(call.get("input", {}))
        item_id = f"fc_{n:04d}_{index}"
        call_id = item.get("id") or f"call_{_short_hash(n, index, call['name'])}"
        added = {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": "",
                 "call_id": call_id, "name": call["name"]}
        stream.emit("response.output_item.added", output_index=index, item=added)
        self._deltas(stream, arguments, turn, lambda d: stream.emit(
            "response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=d))
        stream.emit("response.function_call_arguments.done", item_id=item_id, output_index=index,
                    arguments=arguments)
        status = "incomplete" if turn.stop in INCOMPLETE_REASONS and index == len(turn.items) - 1 else "completed"
        done = {**added, "status": status, "arguments": arguments}
        stream.emit("response.output_item.done", output_index=index, item=done)
        stream.output.append(done)
        stream.output_chars += len(arguments)
