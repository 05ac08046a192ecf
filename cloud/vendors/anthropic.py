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
from cloud.vendors.base import ModelError, ModelTurn, TurnRequest, VendorInfo
from cloud.vendors.images import image_max_px
from cloud.vendors.profiles import model_profile
from cloud.vendors.retry import (
    DEFAULT_POLICY,
    RetryPolicy,
    VendorFailure,
    parse_retry_after,
    stream_with_retries,
)
from cloud.vendors.turn_assembler import TurnAssembler, decline

KEY_ENV = "ANTHROPIC_API_KEY"
MAX_PAUSE_CONTINUATIONS = 3
# In-stream `error` events arrive with HTTP status 200; their type says what really happened.
ERROR_TYPE_STATUS = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500, "timeout_error": 504,
                     "invalid_request_error": 400, "authentication_error": 401, "permission_error": 403,
                     "not_found_error": 404, "request_too_large": 413}


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
    """Translates one attempt's events (decoded SSE JSON) into the shared TurnAssembler's events.

    Events are read as plain dicts from the SDK's SSE decoder rather than as typed models: building a
    pydantic object per delta cost two thirds of the time per chunk."""

    def __init__(self) -> None:
        self.fold = TurnAssembler(VENDOR)
        self.kinds: dict[int, str] = {}  # open block index -> text | thinking | tool_call
        self.stop_reason: str | None = None
        self.finished = False

    def usage_from(self, usage: dict[str, Any] | None) -> None:
        if not usage:
            return
        target = self.fold.usage
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
            if self.kinds.pop(event["index"], None) == "tool_call":
                return self.fold.close_call(event["index"])
        elif kind == "message_start":
            self.usage_from(event.get("message", {}).get("usage"))
        elif kind == "message_delta":
            self.stop_reason = event.get("delta", {}).get("stop_reason") or self.stop_reason
            self.usage_from(event.get("usage"))
        elif kind == "message_stop":
            self.finished = True
        return None

    def _start(self, index: int, block: dict[str, Any]) -> Chunk | None:
        kind = block.get("type")
        if kind == "text":
            self.kinds[index] = "text"
            return self.fold.prose("text", block.get("text") or "", index)
        if kind == "thinking":
            self.kinds[index] = "thinking"
            self.fold.start_prose("thinking", index, {"vendor": VENDOR, "signature": block.get("signature") or ""})
            return self.fold.prose("thinking", block.get("thinking") or "", index)
        if kind == "redacted_thinking":
            self.kinds[index] = "thinking"
            self.fold.start_prose("thinking", index, {"vendor": VENDOR, "redacted_data": block["data"]})
        elif kind == "tool_use":
            self.kinds[index] = "tool_call"
            self.fold.open_call(index, block["id"], block["name"])
        return None  # other blocks are server-side ones we do not use

    def _delta(self, index: int, delta: dict[str, Any]) -> Chunk | None:
        kind = delta.get("type")
        if kind == "input_json_delta":
            return self.fold.call_piece(index, delta.get("partial_json") or "")
        if index not in self.kinds:
            return None
        if kind == "text_delta":
            return self.fold.prose("text", delta["text"], index)
        if kind == "thinking_delta":
            return self.fold.prose("thinking", delta["thinking"], index)
        if kind == "signature_delta":
            self.fold.set_state(index, {"vendor": VENDOR, "signature": delta["signature"]})
        return None

    def turn(self, stop_reason: str | None = None) -> ModelTurn:
        """The attempt's turn; a call still open (cancelled mid-call) is dropped, the prose so far is kept."""
        return self.fold.build(stop_reason or self.stop_reason or "end_turn")


class AnthropicModel:
    vendor = VENDOR
    key_env = KEY_ENV
    can_summarise = True

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

    @property
    def configured(self) -> bool:
        return is_configured()

    def request_kwargs(self, request: TurnRequest, view: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        return build_request(self.model, request.system, request.tools, view if view is not None else request.transcript,
                             request.max_tokens, self.thinking_mode)

    def stream(self, request: TurnRequest, cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]:
        client = self.client
        if client.api_key is None and client.auth_token is None and getattr(client, "credentials", None) is None:
            raise ModelError(VENDOR, f"no credentials: set {KEY_ENV}")
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
            yield from decline(total)
        elif total.stop_reason == "pause_turn":
            total.stop_reason = "end_turn" if not total.tool_calls else "tool_use"
        return total

    def _attempt(self, kwargs: dict[str, Any], cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]:
        state = StreamState()
        try:
            with self.client.messages.with_streaming_response.create(**kwargs, stream=True) as response:
                for sse in anthropic.Stream.raw_events(response.http_response):
                    if cancel.is_set():
                        return state.turn("cancelled")
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
        return state.turn()


def create(model: str) -> AnthropicModel:
    return AnthropicModel(model)


def is_configured() -> bool:
    return bool(os.environ.get(KEY_ENV) or os.environ.get("ANTHROPIC_AUTH_TOKEN"))


VENDOR_INFO = VendorInfo(VENDOR, create, is_configured, KEY_ENV, example="anthropic:claude-sonnet-4-6",
                         default_model="anthropic:claude-sonnet-4-6",
                         suggested=("anthropic:claude-sonnet-4-6", "anthropic:claude-opus-4-6",
                                    "anthropic:claude-haiku-4-5"))
