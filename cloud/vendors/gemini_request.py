"""The neutral transcript rebuilt as google-genai `contents` plus a GenerateContentConfig.

Gemini's own parts go back as they came: thought signatures (vendor_state {"vendor": "gemini",
"thought_signature": urlsafe base64}) stay on the part that carried them, function call ids are sent back
only when Gemini minted them. Images from tool results ride in functionResponse parts where the model
supports it (Gemini 3+), otherwise in a user content right after the function responses. Another
vendor's state and unsigned thinking are dropped; on models that validate signatures, a function call
from another vendor in the current tool loop carries the documented skip marker instead.
"""
from __future__ import annotations

import base64
from typing import Any

from google.genai import types

from cloud.transcript import Entry
from cloud.vendors.images import scale_for
from cloud.vendors.tool_schemas import gemini_function_declarations

VENDOR = "gemini"
# Documented stand-in for function calls Gemini did not produce itself (e.g. after a vendor switch).
SKIP_SIGNATURE = base64.urlsafe_b64decode("skip_thought_signature_validator")
TOOL_IMAGES_NOTE = "Images returned by the tool calls above:"


def encode_signature(signature: bytes) -> str:
    return base64.urlsafe_b64encode(signature).decode("ascii")


def decode_signature(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _own_state(part: dict[str, Any]) -> dict[str, Any] | None:
    state = part.get("vendor_state")
    return state if isinstance(state, dict) and state.get("vendor") == VENDOR else None


def _signature_of(part: dict[str, Any]) -> bytes | None:
    state = _own_state(part)
    return decode_signature(state["thought_signature"]) if state and state.get("thought_signature") else None


def _inline(part: dict[str, Any], model: str) -> dict[str, Any]:
    scaled = scale_for(VENDOR, model, part)
    return {"mime_type": scaled["media_type"], "data": base64.b64decode(scaled["data"])}


def _user_parts(entry: Entry, model: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in entry.get("content", []):
        if part.get("type") == "text" and part.get("text"):
            parts.append({"text": part["text"]})
        elif part.get("type") == "image":
            parts.append({"inline_data": _inline(part, model)})
    return parts


class ContentsBuilder:
    def __init__(self, model: str, multimodal_function_response: bool, requires_signatures: bool):
        self.model = model
        self.multimodal_function_response = multimodal_function_response
        self.requires_signatures = requires_signatures
        self.native_ids: set[str] = set()
        self.contents: list[dict[str, Any]] = []

    def _model_parts(self, entry: Entry, in_current_loop: bool) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        signed_call_seen = False
        for part in entry.get("content", []):
            kind = part.get("type")
            signature = _signature_of(part)
            if kind == "thinking":
                if signature:
                    parts.append({"text": part.get("text", ""), "thought": True, "thought_signature": signature})
            elif kind == "text":
                if part.get("text") or signature:
                    out: dict[str, Any] = {"text": part.get("text", "")}
                    if signature:
                        out["thought_signature"] = signature
                    parts.append(out)
            elif kind == "tool_call":
                call: dict[str, Any] = {"name": part["name"],
                                        "args": part["input"] if isinstance(part.get("input"), dict) else {}}
                state = _own_state(part)
                if state and state.get("native_id"):
                    call["id"] = part["id"]
                    self.native_ids.add(part["id"])
                out = {"function_call": call}
                if signature:
                    out["thought_signature"] = signature
                    signed_call_seen = True
                elif in_current_loop and self.requires_signatures and not signed_call_seen and state is None:
                    out["thought_signature"] = SKIP_SIGNATURE
                    signed_call_seen = True
                parts.append(out)
        return parts

    def _tool_parts(self, entry: Entry) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        responses, late_images = [], []
        for result in entry.get("content", []):
            if result.get("type") != "tool_result":
                continue
            text = "\n".join(p["text"] for p in result.get("content", []) if p.get("type") == "text" and p.get("text"))
            images = [_inline(p, self.model) for p in result.get("content", []) if p.get("type") == "image"]
            response: dict[str, Any] = {"name": result.get("name") or "tool",
                                        "response": {"error" if result.get("is_error") else "output": text}}
            if result["tool_call_id"] in self.native_ids:
                response["id"] = result["tool_call_id"]
            if images and self.multimodal_function_response:
                response["parts"] = [{"inline_data": image} for image in images]
            else:
                late_images.extend({"inline_data": image} for image in images)
            responses.append({"function_response": response})
        return responses, late_images

    def _append(self, role: str, parts: list[dict[str, Any]]) -> None:
        if parts:
            self.contents.append({"role": role, "parts": parts})

    def build(self, view: list[Entry]) -> list[dict[str, Any]]:
        loop_start = _current_tool_loop_start(view)
        for index, entry in enumerate(view):
            role = entry.get("role")
            if role == "user":
                self._append("user", _user_parts(entry, self.model))
            elif role == "assistant":
                self._append("model", self._model_parts(entry, index >= loop_start))
            elif role == "tool":
                responses, late_images = self._tool_parts(entry)
                self._append("user", responses)
                if late_images:
                    self._append("user", [{"text": TOOL_IMAGES_NOTE}, *late_images])
        return self.contents


def _current_tool_loop_start(view: list[Entry]) -> int:
    """Index just after the last user-typed message: the assistant turns of the current tool loop."""
    return max((i + 1 for i, e in enumerate(view) if e.get("role") == "user"), default=0)


def build_config(system: str, tools: tuple[dict[str, Any], ...], max_tokens: int,
                 thinking: str) -> types.GenerateContentConfig:
    config: dict[str, Any] = {
        "max_output_tokens": max_tokens,
        "automatic_function_calling": {"disable": True},
    }
    if system:
        config["system_instruction"] = system
    if tools:
        config["tools"] = [{"function_declarations": gemini_function_declarations(tools)}]
    if thinking == "dynamic":
        config["thinking_config"] = {"include_thoughts": True}
    return types.GenerateContentConfig.model_validate(config)


def build_contents(view: list[Entry], model: str, multimodal_function_response: bool,
                   requires_signatures: bool) -> list[dict[str, Any]]:
    return ContentsBuilder(model, multimodal_function_response, requires_signatures).build(view)
