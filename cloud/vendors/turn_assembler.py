"""One fold for every vendor: adapters translate their wire events into calls on a TurnAssembler, which
builds the neutral parts (text, thinking, tool calls), the chunks the person sees, and the ModelTurn.

An adapter says *what happened*; the assembler owns what it becomes:

- prose: `prose(kind, piece, key)` adds a piece of "text" or "thinking" to the part `key` (created on
  first use, parts keep their order of arrival); without a key, to the latest part when it is still open
  prose of the same kind, else to a new one. `sealed_prose` adds a part that takes no more pieces (a
  Gemini part carrying a thought signature), `set_state` attaches vendor_state to a keyed part.
- tool calls: `open_call(key, id, name)`, `call_piece(key, piece)` (a ToolInputDelta chunk), and
  `close_call(key)`, which parses the arguments once (one wording for malformed JSON, the raw text kept
  in vendor_state so it goes back to its vendor verbatim) and yields the ToolCall chunk. `whole_call`
  is for vendors that send a call at once; `broken_call` for a call the vendor could not produce.
  A call never closed (cancelled, connection cut) does not reach the turn.
- `build(stop_reason)` returns the ModelTurn (stop_reason None: "tool_use" when there are calls, else
  "end_turn"); `decline(turn)` is what every adapter does with a refusal.

Wording the model reads lives in wording.json.
"""
from __future__ import annotations

import json
from collections.abc import Hashable
from functools import cache
from pathlib import Path
from typing import Any

from cloud.chunks import Chunk
from cloud.vendors.base import ModelTurn, Usage

WORDING_PATH = Path(__file__).with_name("wording.json")
SHOWN_ARGUMENT_CHARS = 200
CHUNK_TYPES = {"text": "Message", "thinking": "Thinking"}


@cache
def wording() -> dict[str, Any]:
    return json.loads(WORDING_PATH.read_text())


def _shown(raw: str) -> str:
    return repr(raw if len(raw) <= SHOWN_ARGUMENT_CHARS else raw[:SHOWN_ARGUMENT_CHARS] + "...")


def parse_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """A tool call's arguments: (input, None) for a JSON object or nothing at all, else ({}, the problem)."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return {}, wording()["invalid_json"].format(error=exc, shown=_shown(raw))
    if not isinstance(value, dict):
        kind = {list: "an array", str: "a string"}.get(type(value), f"a {type(value).__name__}")
        problem = wording()["not_an_object"].format(kind=kind)
        return {}, wording()["invalid_json"].format(error=problem, shown=_shown(raw))
    return value, None


def tool_call_chunk(part: dict[str, Any]) -> Chunk:
    meta = {"tool_call_id": part["id"], "name": part["name"], "input": part["input"]}
    if "input_error" in part:
        meta["input_error"] = part["input_error"]
    return Chunk("ToolCall", part["name"], meta)


def decline(turn: ModelTurn) -> list[Chunk]:
    """A refusal: the turn keeps no tool calls and always says something."""
    turn.stop_reason = "refusal"
    turn.content = [p for p in turn.content if p.get("type") != "tool_call"]
    if turn.text:
        return []
    note = wording()["refusal"]
    turn.content.append({"type": "text", "text": note})
    return [Chunk("Message", note)]


class TurnAssembler:
    """The parts of one attempt at a turn, built from an adapter's normalised events."""

    def __init__(self, vendor: str) -> None:
        self.vendor = vendor
        self.usage = Usage()
        self._parts: list[dict[str, Any]] = []  # prose "text" is a list of pieces until build() joins it
        self._keyed: dict[Hashable, dict[str, Any]] = {}
        self._open_prose: dict[str, Any] | None = None  # the unkeyed prose part still taking pieces
        self._calls: dict[Hashable, tuple[dict[str, Any], list[str]]] = {}  # open calls and their pieces

    # ---- prose

    def prose(self, kind: str, piece: str, key: Hashable | None = None, show: bool = True) -> Chunk | None:
        if key is None:
            part = self._open_prose
            if part is None or part["type"] != kind:
                part = self._open_prose = self._new_part(kind)
        else:
            part = self._keyed.get(key) or self.start_prose(kind, key)
        if not piece:
            return None
        part["text"].append(piece)
        return Chunk(CHUNK_TYPES[kind], piece) if show else None

    def start_prose(self, kind: str, key: Hashable, vendor_state: dict[str, Any] | None = None) -> dict[str, Any]:
        part = self._keyed.get(key)
        if part is None:
            part = self._keyed[key] = self._new_part(kind)
        if vendor_state is not None:
            part["vendor_state"] = vendor_state
        return part

    def sealed_prose(self, kind: str, text: str, vendor_state: dict[str, Any] | None) -> Chunk | None:
        part = self._new_part(kind)
        part["text"].append(text)
        if vendor_state is not None:
            part["vendor_state"] = vendor_state
        self._open_prose = None
        return Chunk(CHUNK_TYPES[kind], text) if text else None

    def set_state(self, key: Hashable, vendor_state: dict[str, Any]) -> None:
        if key in self._keyed:
            self._keyed[key]["vendor_state"] = vendor_state

    def has_prose(self, key: Hashable) -> bool:
        part = self._keyed.get(key)
        return bool(part and part["text"])

    def _new_part(self, kind: str) -> dict[str, Any]:
        part: dict[str, Any] = {"type": kind, "text": []}
        self._parts.append(part)
        return part

    # ---- tool calls

    def open_call(self, key: Hashable, call_id: str, name: str,
                  vendor_state: dict[str, Any] | None = None) -> dict[str, Any]:
        part: dict[str, Any] = {"type": "tool_call", "id": call_id, "name": name, "input": {}}
        if vendor_state is not None:
            part["vendor_state"] = vendor_state
        self._parts.append(part)
        self._calls[key] = (part, [])
        self._open_prose = None
        return part

    def open_call_part(self, key: Hashable) -> dict[str, Any] | None:
        entry = self._calls.get(key)
        return entry[0] if entry else None

    def call_piece(self, key: Hashable, piece: str) -> Chunk | None:
        entry = self._calls.get(key)
        if entry is None or not piece:
            return None
        part, pieces = entry
        pieces.append(piece)
        return Chunk("ToolInputDelta", piece, {"tool_call_id": part["id"], "name": part["name"]})

    def close_call(self, key: Hashable, raw: str | None = None, problem: str | None = None) -> Chunk | None:
        """Parse the call's arguments (`raw` when the vendor sent them whole at the end) and emit the ToolCall."""
        entry = self._calls.pop(key, None)
        if entry is None:
            return None
        part, pieces = entry
        if raw is None:
            raw = "".join(pieces)
        part["input"], error = parse_arguments(raw)
        if error or problem:
            part["input_error"] = " ".join(p for p in (problem, error) if p)
            part["vendor_state"] = {**part.get("vendor_state", {}), "vendor": self.vendor, "arguments": raw}
        return tool_call_chunk(part)

    def close_open_calls(self, problem: str | None = None) -> list[Chunk]:
        return [chunk for key in list(self._calls) if (chunk := self.close_call(key, problem=problem))]

    def whole_call(self, call_id: str, name: str, arguments: dict[str, Any],
                   vendor_state: dict[str, Any] | None = None) -> list[Chunk]:
        """A call the vendor sent complete: one ToolInputDelta with its JSON, then the ToolCall."""
        part = self.open_call(call_id, call_id, name, vendor_state)
        delta = self.call_piece(call_id, json.dumps(arguments))
        del self._calls[call_id]
        part["input"] = arguments
        return [c for c in (delta, tool_call_chunk(part)) if c is not None]

    def broken_call(self, call_id: str, name: str, note: str) -> Chunk:
        """A call the vendor could not produce: it reaches the loop with the note, which tells the model."""
        part = self.open_call(call_id, call_id, name)
        del self._calls[call_id]
        part["input_error"] = note
        return tool_call_chunk(part)

    # ---- the turn

    @property
    def has_calls(self) -> bool:
        open_ids = {id(part) for part, _ in self._calls.values()}
        return any(p["type"] == "tool_call" and id(p) not in open_ids for p in self._parts)

    def build(self, stop_reason: str | None = None) -> ModelTurn:
        open_ids = {id(part) for part, _ in self._calls.values()}
        content = []
        for part in self._parts:
            if part["type"] == "tool_call":
                if id(part) not in open_ids:
                    content.append(part)
                continue
            if isinstance(part["text"], list):
                part["text"] = "".join(part["text"])
            content.append(part)
        turn = ModelTurn(content=content, usage=self.usage)
        turn.stop_reason = stop_reason or ("tool_use" if turn.tool_calls else "end_turn")
        return turn
