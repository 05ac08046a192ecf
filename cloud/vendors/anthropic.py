"""Anthropic Messages API adapter: the official SDK's event stream normalised into the chunk union.

The SDK sends the request (auth, base URL, status errors) and decodes the SSE stream; events are
folded as decoded JSON. thinking -> Thinking (signature / redacted data kept as vendor_state),
text -> Message, input_json_delta -> ToolInputDelta as it arrives, tool_use block stop -> ToolCall
(bad JSON -> input {} with input_error). Usage from message_start and message_delta (cumulative:
overwritten). Retries (HTTP 429/5xx/529, connection drops, the in-stream `error` event) through
cloud.vendors.retry, with the SDK's own retries off. `pause_turn` is continued in place (bounded);
`refusal` ends the turn with a note and no tool calls.
"""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Generator
from typing import Any

import anthropic
import httpx2

from cloud.chunks import Chunk
from cloud.vendors.anthropic_request import VENDOR, build_request
from cloud.vendors.base import ModelError, ModelTurn, TurnRequest
from cloud.vendors.images import image_max_px
from cloud.vendors.profiles import model_profile
from cloud.vendors.retry import (
    DEFAULT_POLICY,
    RetryPolicy,
    VendorFailure,
    parse_retry_after,
    stream_with_retries,
)

MAX_PAUSE_CONTINUATIONS = 3
REFUSAL_NOTE = "The model declined to continue with this request."
# In-stream `error` events arrive with HTTP status 200; their type says what really happened.
ERROR_TYPE_STATUS = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500, "timeout_error": 504,
                     "invalid_request_error": 400, "authentication_error": 401, "permission_error": 403,
                     "not_found_error": 404, "request_too_large": 413}


def invalid_json_note(raw: str, error: str) -> str:
    shown = raw if len(raw) <= 200 else raw[:200] + "..."
    return (f"The arguments of this tool call were not valid JSON ({error}), so the call was not run. "
            f"Arguments received: {shown!r}. Call the tool again with complete, valid JSON arguments.")


def parse_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return {}, invalid_json_note(raw, str(exc))
    if not isinstance(value, dict):
        return {}, invalid_json_note(raw, "expected a JSON object")
    return value, None


def _failure_from_status_error(exc: anthropic.APIStatusError) -> VendorFailure:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), dict) else body
    message = str(error.get("message") or exc.message)
    return VendorFailure(exc.status_code, message, parse_retry_after(exc.response.headers))


def _failure_from_error_event(event: Any) -> VendorFailure:
    """An `error` event mid-stream (HTTP status was 200): its type says what really happened."""
    error = event.get("error") if isinstance(event, dict) and isinstance(event.get("error"), dict) else {}
    kind = str(error.get("type", "error"))
    status = ERROR_TYPE_STATUS.get(kind, 500)
    return VendorFailure(status, f"{kind} during the stream: {error.get('message', event)}")


class StreamState:
    """Folds one attempt's events (decoded SSE JSON) into neutral parts, yielding chunks as they arrive.

    Events are read as plain dicts from the SDK's SSE decoder rather than as typed models: building a
    pydantic object per delta cost two thirds of the time per chunk."""

    def __init__(self) -> None:
        self.turn = ModelTurn()
        self.blocks: dict[int, dict[str, Any]] = {}
        self.pieces: dict[int, list[str]] = {}  # text, thinking or JSON pieces of each open block
        self.finished = False

    def usage_from(self, usage: dict[str, Any] | None) -> None:
        if not usage:
            return
        target = self.turn.usage
        if usage.get("input_tokens") is not None:
            target.uncached_input = usage["input_tokens"]
        if usage.get("cache_read_input_tokens") is not None:
            target.cache_read = usage["cache_read_input_tokens"]
        if usage.get("cache_creation_input_tokens") is not None:
            target.cache_write = usage["cache_creation_input_tokens"]
        if usage.get("output_tokens") is not None:
            target.output = usage["output_tokens"]
        details = usage.get("output_tokens_details")
        if isinstance(details, dict) and details.get("thinking_tokens") is not None:
            target.reasoning = details["thinking_tokens"]

    def handle(self, event: dict[str, Any]) -> Chunk | None:
        kind = event.get("type")
        if kind == "content_block_delta":
            return self._delta(event["index"], event["delta"])
        if kind == "content_block_start":
            return self._start(event["index"], event["content_block"])
        if kind == "content_block_stop":
            return self._stop(event["index"])
        if kind == "message_start":
            self.usage_from(event.get("message", {}).get("usage"))
        elif kind == "message_delta":
            stop_reason = event.get("delta", {}).get("stop_reason")
            if stop_reason:
                self.turn.stop_reason = stop_reason
            self.usage_from(event.get("usage"))
        elif kind == "message_stop":
            self.finished = True
        return None

    def _start(self, index: int, block: dict[str, Any]) -> Chunk | None:
        kind = block.get("type")
        if kind == "text":
            part: dict[str, Any] = {"type": "text", "text": ""}
            first = block.get("text") or ""
        elif kind == "thinking":
            part = {"type": "thinking", "text": "",
                    "vendor_state": {"vendor": VENDOR, "signature": block.get("signature") or ""}}
            first = block.get("thinking") or ""
        elif kind == "redacted_thinking":
            part = {"type": "thinking", "text": "", "vendor_state": {"vendor": VENDOR, "redacted_data": block["data"]}}
            first = ""
        elif kind == "tool_use":
            part = {"type": "tool_call", "id": block["id"], "name": block["name"], "input": {}}
            first = ""
        else:
            return None  # server-side blocks we do not use
        self.blocks[index] = part
        self.pieces[index] = [first] if first else []
        if kind != "tool_use":
            self.turn.content.append(part)
        if first and kind == "text":
            return Chunk("Message", first)
        return Chunk("Thinking", first) if first else None

    def _delta(self, index: int, delta: dict[str, Any]) -> Chunk | None:
        part = self.blocks.get(index)
        if part is None:
            return None
        kind = delta.get("type")
        if kind == "text_delta":
            self.pieces[index].append(delta["text"])
            return Chunk("Message", delta["text"])
        if kind == "input_json_delta":
            piece = delta.get("partial_json")
            if not piece:
                return None
            self.pieces[index].append(piece)
            return Chunk("ToolInputDelta", piece, {"tool_call_id": part["id"], "name": part["name"]})
        if kind == "thinking_delta":
            self.pieces[index].append(delta["thinking"])
            return Chunk("Thinking", delta["thinking"])
        if kind == "signature_delta":
            part["vendor_state"]["signature"] = delta["signature"]
        return None

    def _stop(self, index: int) -> Chunk | None:
        part = self.blocks.pop(index, None)
        if part is None:
            return None
        joined = "".join(self.pieces.pop(index, []))
        if part["type"] != "tool_call":
            part["text"] = joined
            return None
        arguments, problem = parse_arguments(joined)
        part["input"] = arguments
        meta: dict[str, Any] = {"tool_call_id": part["id"], "name": part["name"], "input": arguments}
        if problem:
            part["input_error"] = problem
            meta["input_error"] = problem
        self.turn.content.append(part)
        return Chunk("ToolCall", part["name"], meta)

    def close_open_blocks(self) -> None:
        """On a cut-short turn (cancel), keep the prose streamed so far; unfinished calls are dropped."""
        for index in list(self.blocks):
            if self.blocks[index]["type"] != "tool_call":
                self._stop(index)


class AnthropicModel:
    vendor = VENDOR

    def __init__(self, model: str, client: anthropic.Anthropic | None = None, retry: RetryPolicy = DEFAULT_POLICY):
        self.model = model
        self.spec = f"{VENDOR}:{model}"
        profile = model_profile(VENDOR, model)
        self.context_window: int = profile["context_window"]
        self.thinking_mode: str = profile["thinking"]
        self.image_max_px = image_max_px(VENDOR, model)
        self.retry = retry
        # Keys and ANTHROPIC_BASE_URL come from the environment; our retry module owns retries.
        self.client = client or anthropic.Anthropic(max_retries=0)

    def request_kwargs(self, request: TurnRequest, view: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        return build_request(self.model, request.system, request.tools, view if view is not None else request.transcript,
                             request.max_tokens, self.thinking_mode)

    def stream(self, request: TurnRequest, cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]:
        client = self.client
        if client.api_key is None and client.auth_token is None and getattr(client, "credentials", None) is None:
            raise ModelError(VENDOR, "no credentials: set ANTHROPIC_API_KEY")
        view = list(request.transcript)
        total = ModelTurn()
        for _ in range(MAX_PAUSE_CONTINUATIONS + 1):
            kwargs = self.request_kwargs(request, view)
            turn = yield from stream_with_retries(VENDOR, lambda k=kwargs: self._attempt(k, cancel), cancel, self.retry)
            total.content.extend(turn.content)
            total.usage.add(turn.usage)
            total.stop_reason = turn.stop_reason
            if turn.stop_reason != "pause_turn" or cancel.is_set():
                break
            # The server paused a long turn: send it back as-is and let the model carry on.
            view.append({"role": "assistant", "model": self.spec, "content": turn.content})
        if total.stop_reason == "refusal":
            total.content = [p for p in total.content if p["type"] != "tool_call"]
            if not total.text:
                total.content.append({"type": "text", "text": REFUSAL_NOTE})
                yield Chunk("Message", REFUSAL_NOTE)
        elif total.stop_reason == "pause_turn":
            total.stop_reason = "end_turn" if not total.tool_calls else "tool_use"
        return total

    def _attempt(self, kwargs: dict[str, Any], cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]:
        state = StreamState()
        try:
            with self.client.messages.with_streaming_response.create(**kwargs, stream=True) as response:
                for sse in anthropic.Stream.raw_events(response.http_response):
                    if cancel.is_set():
                        state.close_open_blocks()
                        state.turn.stop_reason = "cancelled"
                        return state.turn
                    if sse.event is None or sse.event == "ping" or not sse.data:
                        continue  # as the SDK's own stream does
                    event = json.loads(sse.data)
                    if sse.event == "error":
                        raise _failure_from_error_event(event)
                    chunk = state.handle(event)
                    if chunk is not None:
                        yield chunk
        except anthropic.APIStatusError as exc:
            raise _failure_from_status_error(exc) from exc
        except (anthropic.APIConnectionError, httpx2.TransportError) as exc:
            raise VendorFailure(None, f"connection failed: {exc}") from exc
        except anthropic.AnthropicError as exc:  # credentials and other client-side problems
            raise VendorFailure(None, str(exc), retryable=False) from exc
        if not state.finished:
            raise VendorFailure(None, "the stream ended before message_stop (connection cut)")
        return state.turn


def create(model: str) -> AnthropicModel:
    return AnthropicModel(model)


def is_configured() -> bool:
    return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))
