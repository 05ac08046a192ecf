"""Gemini adapter (google-genai streaming): each streamed GenerateContentResponse normalised into chunks.

Thoughts (`thought: true`) -> Thinking, text -> Message, a function call (Gemini sends it whole) -> one
ToolInputDelta with the whole JSON, then ToolCall (an id is minted when Gemini gives none). Thought
signatures stay on the neutral part that carried them (vendor_state) and go back unchanged. STOP with a
function call is tool use; MALFORMED_FUNCTION_CALL becomes a tool call with input_error so the model is
told and the loop goes on. Usage: prompt_token_count includes the cached tokens; thoughts are output.
Retries through cloud.vendors.retry (the SDK does none by default).
"""
from __future__ import annotations

import os
import re
import threading
import uuid
from collections.abc import Generator
from typing import Any

import httpx2
from google import genai
from google.genai import errors, types

from cloud.chunks import Chunk
from cloud.vendors.base import ModelError, ModelTurn, TurnRequest, VendorInfo
from cloud.vendors.gemini_request import VENDOR, build_config, build_contents, encode_signature
from cloud.vendors.images import image_max_px
from cloud.vendors.profiles import model_profile
from cloud.vendors.retry import (
    DEFAULT_POLICY,
    RetryPolicy,
    VendorFailure,
    parse_retry_after,
    stream_with_retries,
)
from cloud.vendors.turn_assembler import TurnAssembler, decline, wording

API_VERSION = "v1beta"
KEY_ENV = "GEMINI_API_KEY"
REFUSAL_REASONS = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
                   "IMAGE_PROHIBITED_CONTENT", "MODEL_ARMOR", "LANGUAGE"}
MALFORMED_NAME = re.compile(r"(?:default_api\.)?([A-Za-z_][A-Za-z0-9_]*)\s*\(")
RETRY_DELAY = re.compile(r"^([0-9.]+)s$")


def mint_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def malformed_call_note(finish_message: str | None, known_tools: list[str]) -> tuple[str, str]:
    """(tool name, note) for a call Gemini could not produce. It names the tool the finish message
    mentions, else the first declared tool: a declared name keeps the history valid for Gemini.
    (google-genai drops finishMessage on the Gemini API, so the name is often unknown.)"""
    message = (finish_message or "").strip()
    names = [n for n in MALFORMED_NAME.findall(message) if n in known_tools]
    name = names[0] if names else (known_tools[0] if known_tools else "unknown_tool")
    shown = message if len(message) <= 300 else message[:300] + "..."
    return name, wording()["malformed_call"].format(detail=f" ({shown})" if shown else "")


def _retry_after(exc: errors.APIError) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    from_headers = parse_retry_after(dict(headers)) if headers else None
    if from_headers is not None:
        return from_headers
    details = exc.details.get("error", {}).get("details", []) if isinstance(exc.details, dict) else []
    for detail in details if isinstance(details, list) else []:
        match = RETRY_DELAY.match(str(detail.get("retryDelay", ""))) if isinstance(detail, dict) else None
        if match:
            return float(match.group(1))
    return None


class StreamState:
    """Translates the streamed responses of one attempt into the shared TurnAssembler's events."""

    def __init__(self, known_tools: list[str]) -> None:
        self.fold = TurnAssembler(VENDOR)
        self.known_tools = known_tools
        self.finish_reason: str | None = None
        self.finish_message: str | None = None

    def handle(self, response: types.GenerateContentResponse) -> Generator[Chunk, None, None]:
        if response.usage_metadata is not None:
            self._usage(response.usage_metadata)
        if not response.candidates:
            feedback = response.prompt_feedback
            if feedback is not None and feedback.block_reason:
                self.finish_reason = "SAFETY"
            return
        candidate = response.candidates[0]
        content = candidate.content
        for part in (content.parts or []) if content is not None else []:
            yield from self._part(part)
        if candidate.finish_reason is not None:
            self.finish_reason = getattr(candidate.finish_reason, "value", str(candidate.finish_reason))
            self.finish_message = candidate.finish_message

    def _usage(self, meta: types.GenerateContentResponseUsageMetadata) -> None:
        prompt = meta.prompt_token_count or 0
        cached = meta.cached_content_token_count or 0
        thoughts = meta.thoughts_token_count or 0
        usage = self.fold.usage
        usage.uncached_input = max(0, prompt - cached)
        usage.cache_read = cached
        usage.output = (meta.candidates_token_count or 0) + thoughts
        usage.reasoning = thoughts

    def _part(self, part: types.Part) -> list[Chunk]:
        signature = encode_signature(part.thought_signature) if part.thought_signature else None
        if part.function_call is not None:
            return self._function_call(part.function_call, signature)
        if part.text is None and signature is None:
            return []
        kind = "thinking" if part.thought else "text"
        if signature is None:
            chunk = self.fold.prose(kind, part.text or "")
        else:
            # A signed part stands alone: later text must not be merged into the part it signs.
            chunk = self.fold.sealed_prose(kind, part.text or "", {"vendor": VENDOR, "thought_signature": signature})
        return [chunk] if chunk else []

    def _function_call(self, call: types.FunctionCall, signature: str | None) -> list[Chunk]:
        state: dict[str, Any] = {"vendor": VENDOR, "native_id": bool(call.id)}
        if signature:
            state["thought_signature"] = signature
        return self.fold.whole_call(call.id or mint_call_id(), call.name or "unknown_tool", dict(call.args or {}),
                                    state)

    def finish(self) -> Generator[Chunk, None, ModelTurn]:
        reason = self.finish_reason
        if reason == "MALFORMED_FUNCTION_CALL":
            name, note = malformed_call_note(self.finish_message, self.known_tools)
            yield self.fold.broken_call(mint_call_id(), name, note)
            return self.fold.build("tool_use")
        if reason == "MISSING_THOUGHT_SIGNATURE":
            raise VendorFailure(400, "Gemini rejected the turn: a thought signature was missing", retryable=False)
        if reason in REFUSAL_REASONS:
            turn = self.fold.build("refusal")
            yield from decline(turn)
            return turn
        # Gemini ends a turn of tool calls with STOP: the calls decide.
        if self.fold.has_calls:
            return self.fold.build("tool_use")
        return self.fold.build("max_tokens" if reason == "MAX_TOKENS" else "end_turn")


class GeminiModel:
    vendor = VENDOR
    key_env = KEY_ENV
    can_summarise = True

    def __init__(self, model: str, client: genai.Client | None = None, retry: RetryPolicy = DEFAULT_POLICY):
        self.model = model
        self.spec = f"{VENDOR}:{model}"
        profile = model_profile(VENDOR, model)
        self.context_window: int = profile["context_window"]
        self.thinking: str = profile["thinking"]
        self.multimodal_function_response: bool = profile["multimodal_function_response"]
        self.requires_signatures: bool = profile["requires_thought_signatures"]
        self.image_max_px = image_max_px(VENDOR, model)
        self.retry = retry
        self._client = client  # kept: a dropped Client closes its transport

    @property
    def configured(self) -> bool:
        return is_configured()

    @property
    def client(self) -> genai.Client:
        if self._client is None:
            key = api_key()
            if not key:
                raise ModelError(VENDOR, "no credentials: set GEMINI_API_KEY (or GOOGLE_API_KEY)")
            # GOOGLE_GEMINI_BASE_URL is read by the SDK itself.
            self._client = genai.Client(api_key=key, http_options=types.HttpOptions(api_version=API_VERSION))
        return self._client

    def request_parts(self, request: TurnRequest) -> tuple[list[dict[str, Any]], types.GenerateContentConfig]:
        contents = build_contents(list(request.transcript), self.model, self.multimodal_function_response,
                                  self.requires_signatures)
        return contents, build_config(request.system, request.tools, request.max_tokens, self.thinking)

    def stream(self, request: TurnRequest, cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]:
        client = self.client  # fails here, as a ModelError, when no key is configured
        contents, config = self.request_parts(request)
        known_tools = [t["name"] for t in request.tools]
        return (yield from stream_with_retries(
            VENDOR, lambda: self._attempt(client, contents, config, known_tools, cancel), cancel, self.retry))

    def _attempt(self, client: genai.Client, contents: list[dict[str, Any]], config: types.GenerateContentConfig,
                 known_tools: list[str], cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]:
        state = StreamState(known_tools)
        responses = client.models.generate_content_stream(model=self.model, contents=contents, config=config)
        try:
            for response in responses:
                if cancel.is_set():
                    return state.fold.build("cancelled")
                yield from state.handle(response)
        except errors.APIError as exc:
            raise VendorFailure(exc.code, str(exc.message or exc), _retry_after(exc)) from exc
        except httpx2.TransportError as exc:
            raise VendorFailure(None, f"connection failed: {exc}") from exc
        finally:
            close = getattr(responses, "close", None)
            if close is not None:
                close()
        if state.finish_reason is None:
            raise VendorFailure(None, "the stream ended without a finish reason (connection cut)")
        return (yield from state.finish())


def api_key() -> str | None:
    return os.environ.get(KEY_ENV) or os.environ.get("GOOGLE_API_KEY")


def create(model: str) -> GeminiModel:
    return GeminiModel(model)


def is_configured() -> bool:
    return bool(api_key())


VENDOR_INFO = VendorInfo(VENDOR, create, is_configured, KEY_ENV, example="gemini:gemini-2.5-pro",
                         default_model="gemini:gemini-2.5-pro",
                         suggested=("gemini:gemini-2.5-pro", "gemini:gemini-2.5-flash"))
