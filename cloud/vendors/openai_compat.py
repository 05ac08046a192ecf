"""`openai-compat:MODEL[@ENDPOINT]`: any OpenAI-compatible Chat Completions server (Ollama, vLLM, llama.cpp).

The endpoint is one the server's operator allowed (compat_endpoints.py: a name, an allowed URL, or the
default); the SDK streams from it. Its error text is logged, not echoed to the client. Tool-call fragments are keyed by `index`
(the id and name come only in the first fragment); a server that sends each call whole in one
chunk (Ollama) takes the same path. Reasoning arrives outside the official schema, as
`delta.reasoning` (Ollama, vLLM) or `delta.reasoning_content` (llama.cpp). Tool messages carry
text only, so images from tool results follow in a user message. Nothing vendor-specific needs to
go back to these servers, so this adapter keeps no vendor_state beyond a malformed call's raw text.
Chunks become TurnAssembler events (cloud/vendors/turn_assembler.py).
"""
from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from collections.abc import Generator
from typing import Any

import openai

from cloud.chunks import Chunk
from cloud.transcript import Entry
from cloud.vendors import compat_endpoints, images, tool_schemas
from cloud.vendors.base import ModelTurn, TurnRequest, Usage, VendorInfo
from cloud.vendors.openai_wire import data_url, failure_from_sdk, open_event_stream
from cloud.vendors.profiles import model_profile
from cloud.vendors.retry import DEFAULT_POLICY, RetryPolicy, VendorFailure, stream_with_retries
from cloud.vendors.turn_assembler import TurnAssembler, decline, wording

VENDOR = "openai-compat"
API_KEY_ENV = "OPENAI_COMPAT_API_KEY"
LOG = logging.getLogger(__name__)
LOGGED_CHARS = 500
CONTEXT_WINDOW_ENV = "OPENAI_COMPAT_CONTEXT_WINDOW"
# Local servers ignore the key, but the SDK insists on one.
PLACEHOLDER_KEY = "not-needed"
REASONING_FIELDS = ("reasoning", "reasoning_content")
STOP_REASONS = {"length": "max_tokens", "content_filter": "refusal"}


# ---------------------------------------------------------------- neutral transcript -> messages

def _image_url(image: dict[str, Any], model: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": data_url(images.scale_for(VENDOR, model, image))}}


def _append_user(messages: list[dict[str, Any]], content: list[dict[str, Any]]) -> None:
    # Several chat templates insist that roles alternate: fold consecutive user content into one message.
    if messages and messages[-1]["role"] == "user":
        previous = messages[-1]["content"]
        if isinstance(previous, str):
            previous = [{"type": "text", "text": previous}]
        messages[-1]["content"] = previous + content
    else:
        messages.append({"role": "user", "content": content})


def _simplify(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Text-only user messages go as plain strings, which every server accepts.
    for message in messages:
        content = message["content"]
        if message["role"] == "user" and isinstance(content, list) and all(p["type"] == "text" for p in content):
            message["content"] = "\n\n".join(p["text"] for p in content)
    return messages


def _assistant_message(entry: Entry) -> dict[str, Any] | None:
    text = "".join(p.get("text", "") for p in entry.get("content", []) if p.get("type") == "text")
    calls = []
    for part in entry.get("content", []):
        if part.get("type") != "tool_call":
            continue
        state = part.get("vendor_state") or {}
        own_raw = state.get("vendor") == VENDOR and "arguments" in state
        arguments = state["arguments"] if own_raw else json.dumps(part["input"])
        calls.append({"id": part["id"], "type": "function", "function": {"name": part["name"], "arguments": arguments}})
    if not text and not calls:
        return None
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    return message


def _tool_messages(entry: Entry, model: str, messages: list[dict[str, Any]]) -> None:
    shown: list[dict[str, Any]] = []
    for part in entry.get("content", []):
        if part.get("type") != "tool_result":
            continue
        pieces = part.get("content", [])
        text = "\n".join(p["text"] for p in pieces if p.get("type") == "text")
        pictures = [p for p in pieces if p.get("type") == "image"]
        if pictures:
            text += f"\n[{len(pictures)} image(s) follow in the next user message]"
            shown.append({"type": "text", "text": f"Image(s) returned by {part.get('name', 'the tool')} "
                                                  f"(call {part['tool_call_id']}):"})
            shown.extend(_image_url(p, model) for p in pictures)
        messages.append({"role": "tool", "tool_call_id": part["tool_call_id"], "content": text})
    if shown:
        _append_user(messages, shown)


def to_chat_messages(system: str, transcript: list[Entry], model: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for entry in transcript:
        role = entry.get("role")
        if role == "user":
            content = []
            for part in entry.get("content", []):
                if part.get("type") == "text":
                    content.append({"type": "text", "text": part["text"]})
                elif part.get("type") == "image":
                    content.append(_image_url(part, model))
            if content:
                _append_user(messages, content)
        elif role == "assistant":
            message = _assistant_message(entry)
            if message:
                messages.append(message)
        elif role == "tool":
            _tool_messages(entry, model, messages)
    return _simplify(messages)


# ---------------------------------------------------------------- chunk stream -> chunks + ModelTurn

def normalise_usage(usage: dict[str, Any] | None) -> Usage:
    if not usage:
        return Usage()
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    return Usage(uncached_input=max(0, (usage.get("prompt_tokens") or 0) - cached), cache_read=cached,
                 output=usage.get("completion_tokens") or 0, reasoning=reasoning)


class ChatStreamReader:
    """Translates one Chat Completions chunk stream (chunks as JSON objects) into TurnAssembler events."""

    def __init__(self) -> None:
        self.fold = TurnAssembler(VENDOR)
        self.by_index: dict[int, str] = {}  # tool-call index -> the open call's id
        self.call_ids: list[str] = []  # open calls, in order
        self.finish_reason: str | None = None

    def read(self, chunk: dict[str, Any]) -> list[Chunk]:
        if chunk.get("usage"):
            self.fold.usage = normalise_usage(chunk["usage"])
        out: list[Chunk] = []
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta")
            if delta:
                for name in REASONING_FIELDS:
                    if delta.get(name) and (chunk := self.fold.prose("thinking", delta[name])):
                        out.append(chunk)
                if delta.get("content") and (chunk := self.fold.prose("text", delta["content"])):
                    out.append(chunk)
                for fragment in delta.get("tool_calls") or ():
                    self._tool_fragment(fragment, out)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
                out.extend(self.fold.close_open_calls())
                self.by_index, self.call_ids = {}, []
        return out

    def _tool_fragment(self, fragment: dict[str, Any], out: list[Chunk]) -> None:
        call_id, index = fragment.get("id"), fragment.get("index")
        if index is None:  # a server that omits it: a new id starts a call, anything else continues the last
            fresh = call_id and not (self.call_ids and self.call_ids[-1] == call_id)
            index = len(self.call_ids) if fresh or not self.call_ids else len(self.call_ids) - 1
        known = self.by_index.get(index)
        # A new id at a known index is a new call (some servers repeat index 0 for every call).
        if known is None or (call_id and call_id != known):
            known = call_id or f"call_{uuid.uuid4().hex[:24]}"
            self.fold.open_call(known, known, "")
            self.by_index[index] = known
            self.call_ids.append(known)
        function = fragment.get("function") or {}
        part = self.fold.open_call_part(known)
        if part is not None and function.get("name") and not part["name"]:
            part["name"] = function["name"]
        piece = function.get("arguments") or ""
        if not isinstance(piece, str):  # a few servers send the arguments as an object
            piece = json.dumps(piece)
        chunk = self.fold.call_piece(known, piece)
        if chunk is not None:
            out.append(chunk)

    def finish(self, stop_reason: str | None = None) -> ModelTurn:
        # Some servers finish a tool-calling turn with "stop": then the calls themselves decide.
        return self.fold.build(stop_reason or STOP_REASONS.get(self.finish_reason or ""))


# ---------------------------------------------------------------- the adapter

class OpenAICompatModel:
    vendor = VENDOR
    key_env = API_KEY_ENV
    can_summarise = True

    def __init__(self, model: str, client: openai.OpenAI | None = None, policy: RetryPolicy = DEFAULT_POLICY):
        self.model, target = compat_endpoints.split_model(model)
        self.endpoint = compat_endpoints.resolve(target)  # refuses (403) what the server does not allow
        self.spec = f"{VENDOR}:{model}"  # as given: an endpoint's URL (and any credentials in it) stays here
        fallback = model_profile(VENDOR, self.model).get("context_window", 32_768)
        self.context_window = int(os.environ.get(CONTEXT_WINDOW_ENV) or fallback)
        self.image_max_px = images.image_max_px(VENDOR, self.model)
        self.policy = policy
        self._client = client

    @property
    def configured(self) -> bool:
        return is_configured()

    @property
    def client(self) -> openai.OpenAI:
        if self._client is None:
            # The key goes only to an endpoint the server's operator configured, never to a URL typed elsewhere.
            key = os.environ.get(API_KEY_ENV) if self.endpoint.name else None
            # Retries are stream_with_retries' alone (it emits reset_turn and keeps the bound).
            self._client = openai.OpenAI(api_key=key or PLACEHOLDER_KEY, base_url=self.endpoint.url, max_retries=0)
        return self._client

    def request_params(self, request: TurnRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": to_chat_messages(request.system, request.transcript, self.model),
            "max_tokens": request.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            params["tools"] = tool_schemas.chat_completions_tools(request.tools)
        return params

    def stream(self, request: TurnRequest, cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]:
        params = self.request_params(request)
        return (yield from stream_with_retries(VENDOR, lambda: self._attempt(params, cancel), cancel, self.policy))

    def _attempt(self, params: dict[str, Any], cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]:
        reader = ChatStreamReader()
        try:
            with open_event_stream(self.client, "/chat/completions", params) as stream:
                for chunk in stream:
                    yield from reader.read(chunk)
                    if cancel.is_set():
                        return reader.finish("cancelled")
        except openai.OpenAIError as exc:
            raise quiet_failure(failure_from_sdk(exc), self.endpoint) from exc
        if reader.finish_reason is None:
            raise VendorFailure(None, "the stream ended before a finish_reason (truncated)")
        turn = reader.finish()
        if turn.stop_reason == "refusal":
            for chunk in decline(turn):
                yield chunk
        return turn


def quiet_failure(failure: VendorFailure, endpoint: compat_endpoints.Endpoint) -> VendorFailure:
    """The endpoint's own error text goes to the server log, not back to the client.

    Echoing it would turn the server into an oracle for whatever answers at that address; the client
    learns the status and which endpoint, which is what it needs to act."""
    LOG.warning("openai-compat endpoint %s failed (status %s): %r", endpoint.label, failure.status,
                failure.message[:LOGGED_CHARS])
    texts = wording()["compat_status"]
    status = failure.status
    if failure.message.startswith("mid-stream"):
        kind = "stream"
    elif status is None:
        kind = "connection"
    elif str(status) in texts:
        kind = str(status)
    else:
        kind = "5xx" if status >= 500 else "other"
    message = texts[kind].format(endpoint=endpoint.label, status=status) + f" ({texts['details']})"
    return VendorFailure(status, message, failure.retry_after, failure.retryable)


def create(model: str) -> OpenAICompatModel:
    return OpenAICompatModel(model)


def is_configured() -> bool:
    """Configured when the server lists at least one endpoint (a key alone reaches nothing)."""
    return bool(compat_endpoints.configured())


VENDOR_INFO = VendorInfo(VENDOR, create, is_configured, API_KEY_ENV, example="openai-compat:MODEL@ENDPOINT")
