"""A deterministic model for tests and the offline demo: it plays turns from a JSON file.

Format (fixed by DESIGN.md): {"turns": [[{"thinking": str} | {"text": str} | {"tool_call": {name, input}}, ...], ...]}.
It ignores its input except to count the assistant turns already in the transcript (so a conversation
resumes where it left off), streams in small deltas like a real vendor, and honours max_tokens
(about four characters a token), stopping mid-call exactly as a real model would.
"""
from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

from cloud.chunks import Chunk
from cloud.vendors.base import ModelError, ModelTurn, TurnRequest, Usage

CHARS_PER_TOKEN = 4
DELTA_CHARS = 12
OUT_OF_TURNS = "The scripted conversation has no more turns."


def load_script(path: Path) -> list[list[dict[str, Any]]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ModelError("scripted", f"cannot read script {path}: {exc}") from exc
    turns = data.get("turns") if isinstance(data, dict) else None
    if not isinstance(turns, list) or not all(isinstance(t, list) for t in turns):
        raise ModelError("scripted", f"{path}: expected {{\"turns\": [[...], ...]}}")
    for i, turn in enumerate(turns):
        for item in turn:
            if not (isinstance(item, dict) and len(item) == 1 and next(iter(item)) in ("thinking", "text", "tool_call")):
                raise ModelError("scripted", f"{path}: turn {i}: each item is one of thinking, text, tool_call")
    return turns


def _pieces(text: str, size: int = DELTA_CHARS) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i:i + size]


class ScriptedModel:
    vendor = "scripted"
    context_window = 1_000_000

    def __init__(self, path: str):
        self.path = Path(path)
        self.spec = f"scripted:{path}"
        self.turns = load_script(self.path)

    def stream(self, request: TurnRequest, cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]:
        played = sum(1 for e in request.transcript if e.get("role") == "assistant" and e.get("model") == self.spec)
        played += sum(e.get("compaction", {}).get("scripted_turns", 0) for e in request.transcript)
        items = self.turns[played] if played < len(self.turns) else [{"text": OUT_OF_TURNS}]
        budget = request.max_tokens * CHARS_PER_TOKEN
        turn = ModelTurn(usage=Usage(uncached_input=sum(len(json.dumps(e)) for e in request.transcript) // CHARS_PER_TOKEN))
        spent = 0

        def take(n: int) -> bool:
            nonlocal spent
            spent += n
            return spent <= budget

        for item in items:
            if cancel.is_set():
                break
            kind, value = next(iter(item.items()))
            if kind in ("thinking", "text"):
                part = {"type": kind, "text": ""}
                turn.content.append(part)
                for piece in _pieces(value):
                    if not take(len(piece)):
                        return self._stopped(turn, spent)
                    part["text"] += piece
                    yield Chunk("Thinking" if kind == "thinking" else "Message", piece)
            else:
                call_id = "call_" + uuid.uuid4().hex[:16]
                name, arguments = value["name"], value.get("input", {})
                raw = json.dumps(arguments)
                for piece in _pieces(raw, max(DELTA_CHARS, len(raw) // 6 + 1)):
                    if not take(len(piece)):
                        return self._stopped(turn, spent)
                    yield Chunk("ToolInputDelta", piece, {"tool_call_id": call_id, "name": name})
                call = {"type": "tool_call", "id": call_id, "name": name, "input": arguments}
                turn.content.append(call)
                yield Chunk("ToolCall", name, {"tool_call_id": call_id, "name": name, "input": arguments})
        turn.stop_reason = "tool_use" if turn.tool_calls else "end_turn"
        turn.usage.output = spent // CHARS_PER_TOKEN
        return turn

    @staticmethod
    def _stopped(turn: ModelTurn, spent: int) -> ModelTurn:
        turn.stop_reason = "max_tokens"
        turn.usage.output = spent // CHARS_PER_TOKEN
        return turn


def create(model: str) -> ScriptedModel:
    return ScriptedModel(model)


def is_configured() -> bool:
    return True
