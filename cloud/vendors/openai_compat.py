"""`openai-compat:MODEL@BASE_URL`: any OpenAI-compatible Chat Completions server (Ollama, vLLM, llama.cpp).

Streams through the official SDK pointed at BASE_URL. Tool-call fragments are keyed by `index`
(the id and name come only in the first fragment); a server that sends each call whole in one
chunk (Ollama) takes the same path. Reasoning arrives outside the official schema, as
`delta.reasoning` (Ollama, vLLM) or `delta.reasoning_content` (llama.cpp). Tool messages carry
text only, so images from tool results follow in a user message. Nothing vendor-specific needs to
go back to these servers, so this adapter keeps no vendor_state beyond a malformed call's raw text.
"""
from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import openai

from cloud.chunks import Chunk
from cloud.transcript import Entry
from cloud.vendors import images, tool_schemas
from cloud.vendors.base import ModelTurn, TurnRequest, Usage
from cloud.vendors.openai_responses import (
    data_url,
    failure_from_sdk,
    open_event_stream,
    parse_arguments,
    tool_call_chunk,
)
from cloud.vendors.profiles import model_profile
from cloud.vendors.registry import ModelSpecError
from cloud.vendors.retry import DEFAULT_POLICY, RetryPolicy, VendorFailure, stream_with_retries

VENDOR = "openai-compat"
API_KEY_ENV = "OPENAI_COMPAT_API_KEY"
BASE_URL_ENV = "OPENAI_COMPAT_BASE_URL"
CONTEXT_WINDOW_ENV = "OPENAI_COMPAT_CONTEXT_WINDOW"
# Local servers ignore the key, but the SDK insists on one.
PLACEHOLDER_KEY = "not-needed"
REASONING_FIELDS = ("reasoning", "reasoning_content")
STOP_REASONS = {"length": "max_tokens", "content_filter": "refusal"}


def split_model(model: str) -> tuple[str, str]:
    """`MODEL@BASE_URL` -> (MODEL, BASE_URL); without `@`, the base URL comes from OPENAI_COMPAT_BASE_URL."""
    name, sep, base_url = model.rpartition("@")
    if not sep:
        name, base_url = model, os.environ.get(BASE_URL_ENV, "")
    if not name or not base_url.startswith(("http://", "https://")):
        raise ModelSpecError(
            f"openai-compat model {model!r} must look like MODEL@BASE_URL, "
            "e.g. openai-compat:qwen3-coder@http://127.0.0.1:11434/v1")
    return name, base_url


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


@dataclass
class ChatStreamReader:
    """Folds one Chat Completions chunk stream (chunks as JSON objects) into chunks and a ModelTurn."""

    turn: ModelTurn = field(default_factory=ModelTurn)
    by_index: dict[int, dict[str, Any]] = field(default_factory=dict)  # tool-call index -> open call part
    # Deltas are collected in lists and joined once: `+=` on a dict value copies the whole string each time.
    raw_arguments: dict[str, list[str]] = field(default_factory=dict)  # call id -> argument pieces
    open_calls: list[dict[str, Any]] = field(default_factory=list)
    text: list[str] | None = None
    thinking: list[str] | None = None
    finish_reason: str | None = None

    def read(self, chunk: dict[str, Any]) -> list[Chunk]:
        if chunk.get("usage"):
            self.turn.usage = normalise_usage(chunk["usage"])
        out: list[Chunk] = []
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta")
            if delta:
                for name in REASONING_FIELDS:
                    if delta.get(name):
                        out.append(self._thinking(delta[name]))
                if delta.get("content"):
                    out.append(self._message(delta["content"]))
                for fragment in delta.get("tool_calls") or ():
                    self._tool_fragment(fragment, out)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
                out.extend(self._close_calls())
        return out

    def _thinking(self, text: str) -> Chunk:
        if self.thinking is None:
            self.thinking = self._text_part("thinking")
        self.thinking.append(text)
        return Chunk("Thinking", text)

    def _message(self, text: str) -> Chunk:
        if self.text is None:
            self.text = self._text_part("text")
        self.text.append(text)
        return Chunk("Message", text)

    def _text_part(self, kind: str) -> list[str]:
        pieces: list[str] = []
        self.turn.content.append({"type": kind, "text": pieces})  # joined in finish()
        return pieces

    def _tool_fragment(self, fragment: dict[str, Any], out: list[Chunk]) -> None:
        call_id, index = fragment.get("id"), fragment.get("index")
        if index is None:  # a server that omits it: a new id starts a call, anything else continues the last
            fresh = call_id and not (self.open_calls and self.open_calls[-1]["id"] == call_id)
            index = len(self.open_calls) if fresh or not self.open_calls else len(self.open_calls) - 1
        part = self.by_index.get(index)
        # A new id at a known index is a new call (some servers repeat index 0 for every call).
        if part is None or (call_id and call_id != part["id"]):
            part = {"type": "tool_call", "id": call_id or f"call_{uuid.uuid4().hex[:24]}", "name": "", "input": {}}
            self.by_index[index] = part
            self.raw_arguments[part["id"]] = []
            self.open_calls.append(part)
            self.turn.content.append(part)
        function = fragment.get("function") or {}
        if function.get("name") and not part["name"]:
            part["name"] = function["name"]
        piece = function.get("arguments") or ""
        if not isinstance(piece, str):  # a few servers send the arguments as an object
            piece = json.dumps(piece)
        if piece:
            self.raw_arguments[part["id"]].append(piece)
            out.append(Chunk("ToolInputDelta", piece, {"tool_call_id": part["id"], "name": part["name"]}))

    def _close_calls(self) -> list[Chunk]:
        chunks = []
        for part in self.open_calls:
            raw = "".join(self.raw_arguments[part["id"]])
            part["input"], error = parse_arguments(raw)
            if error:
                part["input_error"] = error
                part["vendor_state"] = {"vendor": VENDOR, "arguments": raw}
            chunks.append(tool_call_chunk(part))
        self.open_calls, self.by_index = [], {}
        return chunks

    def finish(self) -> ModelTurn:
        for part in self.turn.content:
            if isinstance(part.get("text"), list):
                part["text"] = "".join(part["text"])
        reason = self.finish_reason
        if reason in STOP_REASONS:
            self.turn.stop_reason = STOP_REASONS[reason]
        else:
            # Some servers finish a tool-calling turn with "stop": the calls themselves decide.
            self.turn.stop_reason = "tool_use" if self.turn.tool_calls else "end_turn"
        return self.turn


# ---------------------------------------------------------------- the adapter

class OpenAICompatModel:
    vendor = VENDOR

    def __init__(self, model: str, client: openai.OpenAI | None = None, policy: RetryPolicy = DEFAULT_POLICY):
        self.model, self.base_url = split_model(model)
        self.spec = f"{VENDOR}:{self.model}@{self.base_url}"
        fallback = model_profile(VENDOR, self.model).get("context_window", 32_768)
        self.context_window = int(os.environ.get(CONTEXT_WINDOW_ENV) or fallback)
        self.image_max_px = images.image_max_px(VENDOR, self.model)
        self.policy = policy
        self._client = client

    @property
    def client(self) -> openai.OpenAI:
        if self._client is None:
            # Retries are stream_with_retries' alone (it emits reset_turn and keeps the bound).
            self._client = openai.OpenAI(api_key=os.environ.get(API_KEY_ENV) or PLACEHOLDER_KEY,
                                         base_url=self.base_url, max_retries=0)
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
                        turn = reader.finish()
                        turn.stop_reason = "cancelled"
                        return turn
        except openai.OpenAIError as exc:
            raise failure_from_sdk(exc) from exc
        if reader.finish_reason is None:
            raise VendorFailure(None, "the stream ended before a finish_reason (truncated)")
        return reader.finish()


def create(model: str) -> OpenAICompatModel:
    return OpenAICompatModel(model)


def is_configured() -> bool:
    """Listed as configured when a default server or a key is set; any MODEL@BASE_URL spec works regardless."""
    return bool(os.environ.get(BASE_URL_ENV) or os.environ.get(API_KEY_ENV))
