"""`openai:MODEL`: the OpenAI Responses API (`POST /responses`, streamed), through the official SDK.

The request is stateless (`store=False`): the whole neutral transcript is sent every turn, and the
model's reasoning items (with their encrypted content) ride along in `vendor_state` so they can go
back verbatim on the next OpenAI turn. Another vendor's state is dropped. Tool results go back as
`function_call_output` items whose output holds text and images side by side.

Also home to the helpers the OpenAI-compatible adapter shares: `open_event_stream` (the SDK's streaming
POST, events as JSON objects), `failure_from_sdk` (SDK error to the retry helper's VendorFailure) and
`parse_arguments` (tool-call JSON, malformed or not).
"""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import openai

from cloud.chunks import Chunk
from cloud.transcript import Entry
from cloud.vendors import images, tool_schemas
from cloud.vendors.base import ModelTurn, TurnRequest, Usage
from cloud.vendors.profiles import model_profile
from cloud.vendors.retry import (
    DEFAULT_POLICY,
    RetryPolicy,
    VendorFailure,
    parse_retry_after,
    stream_with_retries,
)

VENDOR = "openai"
# Error codes (in a mid-stream error event or a failed response) worth another try.
RETRYABLE_CODES = frozenset({"server_error", "rate_limit_exceeded", "overloaded", "server_is_overloaded",
                             "internal_error", "service_unavailable", "timeout"})
CUT_OFF = "the call was cut off by the output limit before its arguments were complete."
STOP_REASONS = {"max_output_tokens": "max_tokens", "content_filter": "refusal"}


# ---------------------------------------------------------------- helpers shared with openai_compat

def open_event_stream(client: openai.OpenAI, path: str, body: dict[str, Any]) -> openai.Stream[Any]:
    """POST `body` and stream the server-sent events back as JSON objects.

    The SDK does the HTTP, auth, SSE decoding, `[DONE]` and mid-stream `{"error": ...}` handling (raising
    APIError) exactly as for `client.responses.create(stream=True)` / `client.chat.completions.create(...)`;
    only the per-event pydantic models are skipped (they cost ~80% of the time per event, which
    capped an adapter near 10,000 chunks/s).
    """
    # `object` (not dict[...]) as the event type: the SDK then hands each decoded JSON object over untouched.
    return client.post(path, body=body, cast_to=object, stream=True, stream_cls=openai.Stream[object])


def failure_from_sdk(exc: openai.OpenAIError) -> VendorFailure:
    """Translate an SDK exception into one attempt's failure (retryable or not)."""
    if isinstance(exc, openai.APIStatusError):
        return VendorFailure(exc.status_code, _describe(exc), parse_retry_after(exc.response.headers))
    if isinstance(exc, openai.APIConnectionError):
        return VendorFailure(None, f"connection failed: {exc.message}")
    if isinstance(exc, openai.APIError):
        # A mid-stream `{"error": {...}}` frame: the HTTP status was 200, the body says what went wrong.
        return failure_from_body(exc.body, exc.message)
    return VendorFailure(None, str(exc), retryable=False)


def failure_from_body(body: object, fallback_message: str) -> VendorFailure:
    body = body if isinstance(body, dict) else {}
    code = body.get("code")
    message = str(body.get("message") or fallback_message)
    status = code if isinstance(code, int) else None
    kind = str(code or body.get("type") or "")
    retryable = (status is not None and (status == 429 or status >= 500)) or kind in RETRYABLE_CODES \
        or kind.endswith("server_error")
    label = f"{kind}: {message}" if kind and kind not in message else message
    return VendorFailure(status, f"mid-stream error: {label}", retryable=retryable)


def _describe(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    detail = body["error"] if isinstance(body.get("error"), dict) else body
    return str(detail.get("message") or exc.message)


def parse_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """A tool call's arguments: (input, None) when they are a JSON object, else ({}, the problem)."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return {}, f"the tool arguments are not valid JSON ({exc}): {raw[:200]!r}"
    if not isinstance(value, dict):
        return {}, f"the tool arguments must be a JSON object, got {type(value).__name__}: {raw[:200]!r}"
    return value, None


def data_url(image: dict[str, Any]) -> str:
    return f"data:{image.get('media_type', 'image/png')};base64,{image['data']}"


def tool_call_chunk(part: dict[str, Any]) -> Chunk:
    meta = {"tool_call_id": part["id"], "name": part["name"], "input": part["input"]}
    if "input_error" in part:
        meta["input_error"] = part["input_error"]
    return Chunk("ToolCall", part["name"], meta)


# ---------------------------------------------------------------- neutral transcript -> Responses input

def _own_state(part: dict[str, Any]) -> dict[str, Any] | None:
    state = part.get("vendor_state")
    return state if isinstance(state, dict) and state.get("vendor") == VENDOR else None


def _input_image(image: dict[str, Any], model: str) -> dict[str, Any]:
    scaled = images.scale_for(VENDOR, model, image)
    return {"type": "input_image", "image_url": data_url(scaled), "detail": "auto"}


def _user_item(entry: Entry, model: str) -> dict[str, Any] | None:
    content = []
    for part in entry.get("content", []):
        if part.get("type") == "text":
            content.append({"type": "input_text", "text": part["text"]})
        elif part.get("type") == "image":
            content.append(_input_image(part, model))
    return {"role": "user", "content": content} if content else None


def _assistant_items(entry: Entry) -> list[dict[str, Any]]:
    items = list(_assistant_parts_as_items(entry))
    # The API rejects a reasoning item with nothing after it (its call may have been dropped as cut off).
    while items and items[-1]["type"] == "reasoning":
        items.pop()
    return items


def _assistant_parts_as_items(entry: Entry) -> Iterable[dict[str, Any]]:
    for part in entry.get("content", []):
        kind, state = part.get("type"), _own_state(part)
        if kind == "thinking":
            if state and "item" in state:
                yield state["item"]  # id, summary, encrypted_content: exactly as received
        elif kind == "text" and part.get("text"):
            message = {"type": "message", "role": "assistant",
                       "content": [{"type": "output_text", "text": part["text"]}]}
            if state and state.get("phase"):
                message["phase"] = state["phase"]
            yield message
        elif kind == "tool_call":
            arguments = state["arguments"] if state and "arguments" in state else json.dumps(part["input"])
            yield {"type": "function_call", "call_id": part["id"], "name": part["name"], "arguments": arguments}


def _tool_output_items(entry: Entry, model: str) -> Iterable[dict[str, Any]]:
    for part in entry.get("content", []):
        if part.get("type") != "tool_result":
            continue
        pieces = part.get("content", [])
        texts = [p["text"] for p in pieces if p.get("type") == "text"]
        pictures = [p for p in pieces if p.get("type") == "image"]
        output: str | list[dict[str, Any]]
        if pictures:
            output = [{"type": "input_text", "text": t} for t in texts]
            output += [_input_image(p, model) for p in pictures]
        else:
            output = "\n".join(texts)
        yield {"type": "function_call_output", "call_id": part["tool_call_id"], "output": output}


def to_responses_input(transcript: list[Entry], model: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for entry in transcript:
        role = entry.get("role")
        if role == "user":
            item = _user_item(entry, model)
            if item:
                items.append(item)
        elif role == "assistant":
            items.extend(_assistant_items(entry))
        elif role == "tool":
            items.extend(_tool_output_items(entry, model))
    return items


# ---------------------------------------------------------------- Responses stream -> chunks + ModelTurn

def normalise_usage(usage: dict[str, Any] | None) -> Usage:
    if not usage:
        return Usage()
    details = usage.get("input_tokens_details") or {}
    cached = details.get("cached_tokens") or 0
    written = details.get("cache_write_tokens") or 0
    reasoning = (usage.get("output_tokens_details") or {}).get("reasoning_tokens") or 0
    # input_tokens counts cached (and cache-written) tokens too: the uncached share is what is left.
    return Usage(uncached_input=max(0, (usage.get("input_tokens") or 0) - cached - written), cache_read=cached,
                 cache_write=written, output=usage.get("output_tokens") or 0, reasoning=reasoning)


@dataclass
class ResponsesStreamReader:
    """Folds one Responses event stream (events as JSON objects) into chunks and a ModelTurn.

    `finished` once a terminal event (completed / incomplete) arrived; failures raise VendorFailure.
    """

    turn: ModelTurn = field(default_factory=ModelTurn)
    parts: dict[int, dict[str, Any]] = field(default_factory=dict)  # output_index -> neutral part
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)  # item_id -> tool_call part (open)
    # Deltas are collected in lists and joined once: `+=` on a dict value copies the whole string each time.
    pieces: dict[str, list[str]] = field(default_factory=dict)  # item_id -> text/summary/arguments so far
    by_item: dict[str, dict[str, Any]] = field(default_factory=dict)  # item_id -> neutral part
    summary_index: dict[str, int] = field(default_factory=dict)  # reasoning item_id -> summary part seen last
    finished: bool = False

    def read(self, event: dict[str, Any]) -> Iterable[Chunk]:
        handler = self.HANDLERS.get(event.get("type"))
        return handler(self, event) if handler else ()

    def _text_delta(self, event: dict[str, Any]) -> Iterable[Chunk]:
        pieces = self.pieces.get(event["item_id"]) or self._pieces(event["item_id"], event["output_index"], "text")
        pieces.append(event["delta"])
        return (Chunk("Message", event["delta"]),)

    def _refusal_delta(self, event: dict[str, Any]) -> Iterable[Chunk]:
        self.turn.stop_reason = "refusal"
        return self._text_delta(event)

    def _arguments_delta(self, event: dict[str, Any]) -> Iterable[Chunk]:
        part = self.calls.get(event["item_id"])
        if part is None:
            return ()
        self.pieces[event["item_id"]].append(event["delta"])
        return (Chunk("ToolInputDelta", event["delta"], {"tool_call_id": part["id"], "name": part["name"]}),)

    def _summary_delta(self, event: dict[str, Any]) -> Iterable[Chunk]:
        item_id, index = event["item_id"], event.get("summary_index", 0)
        pieces = self.pieces.get(item_id) or self._pieces(item_id, event["output_index"], "thinking")
        if self.summary_index.setdefault(item_id, index) != index:
            self.summary_index[item_id] = index
            pieces.append("\n\n")
        pieces.append(event["delta"])
        return (Chunk("Thinking", event["delta"]),)

    def _part(self, item_id: str, output_index: int, kind: str) -> dict[str, Any]:
        part = self.by_item.get(item_id)
        if part is None:
            part = {"type": kind, "text": ""}
            self.by_item[item_id] = self.parts[output_index] = part
            self.pieces[item_id] = []
        return part

    def _pieces(self, item_id: str, output_index: int, kind: str) -> list[str]:
        self._part(item_id, output_index, kind)
        return self.pieces[item_id]

    def _item_added(self, event: dict[str, Any]) -> Iterable[Chunk]:
        item, output_index = event["item"], event["output_index"]
        if item["type"] == "function_call":
            part = {"type": "tool_call", "id": item["call_id"], "name": item["name"], "input": {}}
            self.calls[item["id"]] = self.by_item[item["id"]] = self.parts[output_index] = part
            self.pieces[item["id"]] = []
        elif item["type"] in ("reasoning", "message"):
            self._part(item["id"], output_index, "thinking" if item["type"] == "reasoning" else "text")
        return ()

    def _item_done(self, event: dict[str, Any]) -> Iterable[Chunk]:
        item, output_index = event["item"], event["output_index"]
        if item["type"] == "reasoning":
            part = self._part(item["id"], output_index, "thinking")
            kept = {key: item[key] for key in ("type", "id", "summary", "encrypted_content") if key in item}
            part["vendor_state"] = {"vendor": VENDOR, "item": kept}
            if not self.pieces[item["id"]] and item.get("summary"):
                self.pieces[item["id"]].append("\n\n".join(s.get("text", "") for s in item["summary"]))
        elif item["type"] == "message":
            part = self._part(item["id"], output_index, "text")
            if not self.pieces[item["id"]]:
                self.pieces[item["id"]].extend(c.get("text") or c.get("refusal") or "" for c in item.get("content", []))
            if item.get("phase"):
                part["vendor_state"] = {"vendor": VENDOR, "phase": item["phase"]}
        elif item["type"] == "function_call":
            if item["id"] not in self.calls:
                self._item_added(event)
            cut = CUT_OFF if item.get("status") == "incomplete" else None
            return (self._close_call(item["id"], item.get("arguments"), problem=cut),)
        return ()

    def _close_call(self, item_id: str, arguments: str | None = None, problem: str | None = None) -> Chunk:
        part = self.calls.pop(item_id)
        raw = arguments if arguments is not None else "".join(self.pieces[item_id])
        part["input"], error = parse_arguments(raw)
        if error or problem:
            part["input_error"] = " ".join(p for p in (problem, error) if p)
            part["vendor_state"] = {"vendor": VENDOR, "arguments": raw}
        return tool_call_chunk(part)

    def _finish(self, event: dict[str, Any]) -> Iterable[Chunk]:
        response = event.get("response") or {}
        self.finished = True
        self.turn.usage = normalise_usage(response.get("usage"))
        reason = (response.get("incomplete_details") or {}).get("reason")
        # A call cut off by the output limit still reaches the loop, which tells the model what happened.
        chunks = [self._close_call(item_id, problem=CUT_OFF) for item_id in list(self.calls)]
        self.turn.content = self.content()
        if reason:
            self.turn.stop_reason = STOP_REASONS.get(reason, reason)
        elif self.turn.stop_reason != "refusal":
            self.turn.stop_reason = "tool_use" if self.turn.tool_calls else "end_turn"
        return chunks

    def _failed(self, event: dict[str, Any]) -> Iterable[Chunk]:
        raise failure_from_body((event.get("response") or {}).get("error"), "the response failed")

    def _error(self, event: dict[str, Any]) -> Iterable[Chunk]:
        raise failure_from_body(event, "stream error")

    def content(self) -> list[dict[str, Any]]:
        for item_id, part in self.by_item.items():
            if part["type"] != "tool_call":
                part["text"] = "".join(self.pieces[item_id])
        return [self.parts[i] for i in sorted(self.parts)]

    HANDLERS: ClassVar[dict[str, Callable[[ResponsesStreamReader, dict[str, Any]], Iterable[Chunk]]]] = {
        "response.output_text.delta": _text_delta,
        "response.refusal.delta": _refusal_delta,
        "response.function_call_arguments.delta": _arguments_delta,
        "response.reasoning_summary_text.delta": _summary_delta,
        "response.output_item.added": _item_added,
        "response.output_item.done": _item_done,
        "response.completed": _finish,
        "response.incomplete": _finish,
        "response.failed": _failed,
        "error": _error,
    }


# ---------------------------------------------------------------- the adapter

class OpenAIResponsesModel:
    vendor = VENDOR

    def __init__(self, model: str, client: openai.OpenAI | None = None, policy: RetryPolicy = DEFAULT_POLICY):
        self.model = model
        self.spec = f"{VENDOR}:{model}"
        profile = model_profile(VENDOR, model)
        self.context_window = int(profile.get("context_window", 128_000))
        self.reasoning = bool(profile.get("reasoning", True))
        self.image_max_px = images.image_max_px(VENDOR, model)
        self.policy = policy
        self._client = client

    @property
    def client(self) -> openai.OpenAI:
        if self._client is None:
            # Retries are stream_with_retries' alone (it emits reset_turn and keeps the bound).
            self._client = openai.OpenAI(max_retries=0)
        return self._client

    def request_params(self, request: TurnRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "instructions": request.system,
            "input": to_responses_input(request.transcript, self.model),
            "tools": tool_schemas.responses_tools(request.tools),
            "max_output_tokens": request.max_tokens,
            "prompt_cache_key": request.session_id,
            "store": False,
            "stream": True,
        }
        if self.reasoning:
            params["reasoning"] = {"summary": "auto"}
            params["include"] = ["reasoning.encrypted_content"]
        return params

    def stream(self, request: TurnRequest, cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]:
        params = self.request_params(request)
        return (yield from stream_with_retries(VENDOR, lambda: self._attempt(params, cancel), cancel, self.policy))

    def _attempt(self, params: dict[str, Any], cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]:
        reader = ResponsesStreamReader()
        try:
            with open_event_stream(self.client, "/responses", params) as events:
                # Read to the end even after the terminal event, so the connection goes back to the pool.
                for event in events:
                    yield from reader.read(event)
                    if cancel.is_set() and not reader.finished:
                        reader.turn.content = reader.content()
                        reader.turn.stop_reason = "cancelled"
                        return reader.turn
        except openai.OpenAIError as exc:
            raise failure_from_sdk(exc) from exc
        if not reader.finished:
            raise VendorFailure(None, "the stream ended before response.completed (truncated)")
        return reader.turn


def create(model: str) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(model)


def is_configured() -> bool:
    return bool(os.environ.get("OPENAI_API_KEY"))
