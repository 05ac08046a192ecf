"""A deterministic model for tests, the evaluator and the offline demo: it plays turns from a script.

Format (fixed: the demo's and the evaluator's scripts use it): {"turns": [[{"thinking": str} | {"text": str} | {"tool_call": {name, input}}, ...], ...]}.
The script comes from a JSON file (`scripted:PATH`) or from memory (`ScriptedModel.from_turns(turns)`).

It ignores its input except to find its place: every part of a turn it plays carries
`vendor_state {"vendor": "scripted", "turn": N}`, and the next turn is the one after the latest N in
the model's view. Compaction always keeps the model's latest turn in view, so the place survives any
number of compactions. (A transcript from before these marks resumes by counting its own turns.)
It streams in small deltas like a real vendor, through the same TurnAssembler as every adapter, and
honours max_tokens (about four characters a token), stopping mid-call exactly as a real model would.
It cannot be asked for a summary (`can_summarise` is False): it only ever plays its script.
"""
from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import Any

from cloud.chunks import Chunk
from cloud.vendors.assembler import TurnAssembler
from cloud.vendors.base import ModelError, ModelTurn, TurnRequest, VendorInfo

VENDOR = "scripted"
CHARS_PER_TOKEN = 4
DELTA_CHARS = 12
OUT_OF_TURNS = "The scripted conversation has no more turns."
ITEM_KINDS = ("thinking", "text", "tool_call")

Script = list[list[dict[str, Any]]]


def check_script(data: Any, source: str) -> Script:
    turns = data.get("turns") if isinstance(data, dict) else None
    if not isinstance(turns, list) or not all(isinstance(t, list) for t in turns):
        raise ModelError(VENDOR, f"{source}: expected {{\"turns\": [[...], ...]}}")
    for i, turn in enumerate(turns):
        for item in turn:
            if not (isinstance(item, dict) and len(item) == 1 and next(iter(item)) in ITEM_KINDS):
                raise ModelError(VENDOR, f"{source}: turn {i}: each item is one of thinking, text, tool_call")
            call = item.get("tool_call")
            if call is not None and not (isinstance(call, dict) and isinstance(call.get("name"), str)
                                         and isinstance(call.get("input", {}), dict)):
                raise ModelError(VENDOR, f"{source}: turn {i}: tool_call needs a name and an object input")
    return turns


def load_script(path: Path) -> Script:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ModelError(VENDOR, f"cannot read script {path}: {exc}") from exc
    return check_script(data, str(path))


def _pieces(text: str, size: int = DELTA_CHARS) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i:i + size]


def _played_mark(entry: dict[str, Any]) -> int | None:
    for part in entry.get("content", []):
        state = part.get("vendor_state")
        if isinstance(state, dict) and state.get("vendor") == VENDOR and isinstance(state.get("turn"), int):
            return state["turn"]
    return None


class ScriptedModel:
    vendor = VENDOR
    context_window = 1_000_000
    image_max_px = 1568
    key_env = None
    configured = True
    can_summarise = False

    def __init__(self, path: str):
        self.path = Path(path)
        self.spec = f"{VENDOR}:{path}"
        self.turns = load_script(self.path)

    @classmethod
    def from_turns(cls, turns: Sequence[Sequence[dict[str, Any]]], name: str = "memory") -> ScriptedModel:
        """A script held in memory (tests, the evaluator): same format and behaviour as a file."""
        model = cls.__new__(cls)
        model.path = Path(name)
        model.spec = f"{VENDOR}:{name}"
        model.turns = check_script({"turns": [list(t) for t in turns]}, name)
        return model

    def place(self, view: Sequence[dict[str, Any]]) -> int:
        """The index of the next turn to play, from the latest turn of this script in the model's view."""
        unmarked = 0  # own turns without a mark (older transcripts) count one each
        for entry in reversed(view):
            if entry.get("role") == "assistant" and entry.get("model") == self.spec:
                mark = _played_mark(entry)
                if mark is not None:
                    return mark + 1 + unmarked
                unmarked += 1
        return unmarked

    def stream(self, request: TurnRequest, cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]:
        index = self.place(request.transcript)
        items = self.turns[index] if index < len(self.turns) else [{"text": OUT_OF_TURNS}]
        mark = {"vendor": VENDOR, "turn": index}
        budget = request.max_tokens * CHARS_PER_TOKEN
        fold = TurnAssembler(VENDOR)
        fold.usage.uncached_input = sum(len(json.dumps(e)) for e in request.transcript) // CHARS_PER_TOKEN
        spent = 0
        stop_reason = None
        for number, item in enumerate(items):
            if cancel.is_set():
                stop_reason = "cancelled"
                break
            kind, value = next(iter(item.items()))
            if kind in ("thinking", "text"):
                fold.start_prose(kind, number, dict(mark))
                pieces: Iterator[str] = _pieces(value)
            else:
                call_id = "call_" + uuid.uuid4().hex[:16]
                fold.open_call(number, call_id, value["name"], dict(mark))
                raw = json.dumps(value.get("input", {}))
                pieces = _pieces(raw, max(DELTA_CHARS, len(raw) // 6 + 1))
            for piece in pieces:
                spent += len(piece)
                if spent > budget:
                    stop_reason = "max_tokens"
                    break
                chunk = fold.prose(kind, piece, number) if kind != "tool_call" else fold.call_piece(number, piece)
                if chunk is not None:
                    yield chunk
            if stop_reason:
                break
            if kind == "tool_call":
                chunk = fold.close_call(number)
                if chunk is not None:
                    yield chunk
        if not items:
            fold.start_prose("text", "mark", dict(mark))  # so even an empty turn keeps the place
        fold.usage.output = min(spent, budget) // CHARS_PER_TOKEN
        return fold.build(stop_reason)


def create(model: str) -> ScriptedModel:
    return ScriptedModel(model)


def is_configured() -> bool:
    return True


VENDOR_INFO = VendorInfo(VENDOR, create, is_configured, None, example="scripted:PATH", listed=False)
