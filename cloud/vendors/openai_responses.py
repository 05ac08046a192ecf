"""`openai:MODEL`: the OpenAI Responses API (`POST /responses`, streamed), through the official SDK.

The request is stateless (`store=False`): the whole neutral transcript is sent every turn, and the
model's reasoning items (with their encrypted content) ride along in `vendor_state` so they can go
back verbatim on the next OpenAI turn. Another vendor's state is dropped. Tool results go back as
`function_call_output` items whose output holds text and images side by side.
Stream events are translated into the shared TurnAssembler's events (cloud/vendors/turn_assembler.py).
"""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Generator, Iterable
from typing import Any, ClassVar

import openai

from cloud.chunks import Chunk
from cloud.transcript import Entry
from cloud.vendors import images, tool_schemas
from cloud.vendors.base import ModelTurn, TurnRequest, Usage, VendorInfo
from cloud.vendors.openai_wire import data_url, failure_from_body, failure_from_sdk, open_event_stream
from cloud.vendors.profiles import model_profile
from cloud.vendors.retry import DEFAULT_POLICY, RetryPolicy, VendorFailure, stream_with_retries
from cloud.vendors.turn_assembler import TurnAssembler, decline, wording

VENDOR = "openai"
KEY_ENV = "OPENAI_API_KEY"
STOP_REASONS = {"max_output_tokens": "max_tokens", "content_filter": "refusal"}


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


class ResponsesStreamReader:
    """Translates one Responses event stream (events as JSON objects) into the shared TurnAssembler's events.

    `finished` once a terminal event (completed / incomplete) arrived; failures raise VendorFailure.
    Parts are keyed by item id: text and reasoning summaries stream into theirs, function-call
    arguments into the call opened by `output_item.added`.
    """

    def __init__(self) -> None:
        self.fold = TurnAssembler(VENDOR)
        self.summary_index: dict[str, int] = {}  # reasoning item_id -> summary part seen last
        self.refused = False
        self.finished = False
        self.turn: ModelTurn | None = None

    def read(self, event: dict[str, Any]) -> Iterable[Chunk]:
        handler = self.HANDLERS.get(event.get("type"))
        return handler(self, event) if handler else ()

    def _text_delta(self, event: dict[str, Any]) -> Iterable[Chunk]:
        chunk = self.fold.prose("text", event["delta"], event["item_id"])
        return (chunk,) if chunk else ()

    def _refusal_delta(self, event: dict[str, Any]) -> Iterable[Chunk]:
        self.refused = True
        return self._text_delta(event)

    def _arguments_delta(self, event: dict[str, Any]) -> Iterable[Chunk]:
        chunk = self.fold.call_piece(event["item_id"], event["delta"])
        return (chunk,) if chunk else ()

    def _summary_delta(self, event: dict[str, Any]) -> Iterable[Chunk]:
        item_id, index = event["item_id"], event.get("summary_index", 0)
        if self.summary_index.setdefault(item_id, index) != index:
            self.summary_index[item_id] = index
            self.fold.prose("thinking", "\n\n", item_id, show=False)
        chunk = self.fold.prose("thinking", event["delta"], item_id)
        return (chunk,) if chunk else ()

    def _item_added(self, event: dict[str, Any]) -> Iterable[Chunk]:
        item = event["item"]
        if item["type"] == "function_call":
            self.fold.open_call(item["id"], item["call_id"], item["name"])
        elif item["type"] in ("reasoning", "message"):
            self.fold.start_prose("thinking" if item["type"] == "reasoning" else "text", item["id"])
        return ()

    def _item_done(self, event: dict[str, Any]) -> Iterable[Chunk]:
        item = event["item"]
        if item["type"] == "reasoning":
            kept = {key: item[key] for key in ("type", "id", "summary", "encrypted_content") if key in item}
            self.fold.start_prose("thinking", item["id"], {"vendor": VENDOR, "item": kept})
            if not self.fold.has_prose(item["id"]) and item.get("summary"):
                self.fold.prose("thinking", "\n\n".join(s.get("text", "") for s in item["summary"]), item["id"],
                                show=False)
        elif item["type"] == "message":
            self.fold.start_prose("text", item["id"], {"vendor": VENDOR, "phase": item["phase"]}
                                  if item.get("phase") else None)
            if not self.fold.has_prose(item["id"]):
                whole = "".join(c.get("text") or c.get("refusal") or "" for c in item.get("content", []))
                self.fold.prose("text", whole, item["id"], show=False)
        elif item["type"] == "function_call":
            if self.fold.open_call_part(item["id"]) is None:
                self._item_added(event)
            cut = wording()["cut_off"] if item.get("status") == "incomplete" else None
            chunk = self.fold.close_call(item["id"], item.get("arguments"), problem=cut)
            return (chunk,) if chunk else ()
        return ()

    def _finish(self, event: dict[str, Any]) -> Iterable[Chunk]:
        response = event.get("response") or {}
        self.finished = True
        self.fold.usage = normalise_usage(response.get("usage"))
        reason = (response.get("incomplete_details") or {}).get("reason")
        # A call cut off by the output limit still reaches the loop, which tells the model what happened.
        chunks = self.fold.close_open_calls(problem=wording()["cut_off"])
        if self.refused and not reason:
            reason = "content_filter"
        self.turn = self.fold.build(STOP_REASONS.get(reason, reason) if reason else None)
        if self.turn.stop_reason == "refusal":
            chunks.extend(decline(self.turn))
        return chunks

    def _failed(self, event: dict[str, Any]) -> Iterable[Chunk]:
        raise failure_from_body((event.get("response") or {}).get("error"), "the response failed")

    def _error(self, event: dict[str, Any]) -> Iterable[Chunk]:
        raise failure_from_body(event, "stream error")

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
    key_env = KEY_ENV
    can_summarise = True

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
    def configured(self) -> bool:
        return is_configured()

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
                        return reader.fold.build("cancelled")
        except openai.OpenAIError as exc:
            raise failure_from_sdk(exc) from exc
        if not reader.finished:
            raise VendorFailure(None, "the stream ended before response.completed (truncated)")
        assert reader.turn is not None
        return reader.turn


def create(model: str) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(model)


def is_configured() -> bool:
    return bool(os.environ.get(KEY_ENV))


VENDOR_INFO = VendorInfo(VENDOR, create, is_configured, KEY_ENV, example="openai:gpt-5.1",
                         default_model="openai:gpt-5.1", suggested=("openai:gpt-5.1", "openai:gpt-5.1-mini"))
