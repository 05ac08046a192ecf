"""Gemini API wire format: `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`, data-only SSE where
each event is a whole GenerateContentResponse (camelCase), errors as {"error": {code, message, status}},
implicit prefix caching billed by the simulation (cachedContentTokenCount, included in promptTokenCount)."""
from __future__ import annotations

import base64
import json
import re
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

ROUTE = re.compile(r"^/v1beta/models/(?P<model>[^/:]+):streamGenerateContent$")
STATUS_NAMES = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
                500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def request_segments(body: dict[str, Any]) -> list[str]:
    """The request in prefix order: system instruction, tools, then every part of every content."""
    segments = []
    if body.get("systemInstruction"):
        segments.append(_canonical(body["systemInstruction"]))
    if body.get("tools"):
        segments.append(_canonical(body["tools"]))
    for content in body.get("contents", []):
        for i, part in enumerate(content.get("parts", [])):
            segments.append((content.get("role", "user") + ":" if i == 0 else "") + _canonical(part))
    return segments


def signature_text(raw: str) -> str:
    """Signatures travel as base64; scenarios may give any text."""
    return base64.urlsafe_b64encode(raw.encode()).decode()


class GeminiReplay(ReplayServer):
    def __init__(self, cache: PrefixCache | None = None):
        super().__init__(cache)

    def render_error(self, request: RecordedRequest, error: HttpError) -> Reply:
        body: dict[str, Any] = {"code": error.status, "message": error.message,
                                "status": error.error_type or STATUS_NAMES.get(error.status, "UNKNOWN")}
        headers = {"content-type": "application/json"}
        if error.retry_after is not None:
            body["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                "retryDelay": f"{error.retry_after:g}s"}]
        return Reply(error.status, headers, [json.dumps({"error": body}).encode()])

    def render_turn(self, request: RecordedRequest, turn: Turn) -> Reply:
        route = ROUTE.match(request.path)
        if route is None or request.query.get("alt") != ["sse"]:
            return self.render_error(request, HttpError(404, f"no route {request.path}"))
        model = route.group("model")
        bill = self.cache.bill(request_segments(request.json), None)
        response_id = uuid.uuid4().hex[:16]
        output_chars, thought_chars = 0, 0
        parts: list[dict[str, Any]] = []
        for item in turn.items:
            signature = signature_text(item["signature"]) if item.get("signature") else None
            if "text" in item or "thinking" in item:
                thought = "thinking" in item
                text = item["thinking"] if thought else item["text"]
                chunks = pieces(text, turn.piece_chars)
                for j, piece in enumerate(chunks):
                    part: dict[str, Any] = {"text": piece}
                    if thought:
                        part["thought"] = True
                    if signature and j == len(chunks) - 1:
                        part["thoughtSignature"] = signature  # Gemini signs the last part of a text run
                    parts.append(part)
                if thought:
                    thought_chars += len(text)
                else:
                    output_chars += len(text)
            elif "tool_call" in item:
                call = item["tool_call"]
                function_call: dict[str, Any] = {"name": call["name"], "args": call.get("input", {})}
                if call.get("id"):
                    function_call["id"] = call["id"]
                part = {"functionCall": function_call}
                if signature:
                    part["thoughtSignature"] = signature
                parts.append(part)
                output_chars += len(json.dumps(function_call))
        usage = {"promptTokenCount": bill.total, "cachedContentTokenCount": bill.cache_read,
                 "candidatesTokenCount": max(1, (output_chars + 3) // 4),
                 "thoughtsTokenCount": (thought_chars + 3) // 4}
        usage["totalTokenCount"] = usage["promptTokenCount"] + usage["candidatesTokenCount"] + usage["thoughtsTokenCount"]
        if not usage["cachedContentTokenCount"]:
            del usage["cachedContentTokenCount"]
        frames = []
        for part in parts:
            frames.append(sse({"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}],
                               "usageMetadata": {"promptTokenCount": bill.total}, "modelVersion": model,
                               "responseId": response_id}))
        final: dict[str, Any] = {"finishReason": turn.stop or "STOP", "index": 0}
        if turn.finish_message:
            final["finishMessage"] = turn.finish_message
        frames.append(sse({"candidates": [final], "usageMetadata": usage, "modelVersion": model,
                           "responseId": response_id}))
        return self._with_fault(turn, frames)

    @staticmethod
    def _with_fault(turn: Turn, frames: list[bytes]) -> Reply:
        headers = {"content-type": "text/event-stream"}
        if turn.fault is None:
            return Reply(200, headers, frames)
        cut = min(turn.fault_after, len(frames) - 1)
        if turn.fault == "truncate":
            return Reply(200, headers, frames, truncate_after=cut)
        if turn.fault == "error_event":
            error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
            return Reply(200, headers, [*frames[:cut], sse(error)])
        raise ValueError(f"unknown fault {turn.fault!r}")
