"""A deterministic model for tests, the evaluator and the offline demo: it plays turns from a script.

Format (fixed: the demo's and the evaluator's scripts use it): {"turns": [[{"thinking": str} | {"text": str} | {"tool_call": {name, input}}, ...], ...]}.
The script comes from a JSON file (`scripted:PATH`) or from memory (`ScriptedModel.from_turns(turns)`).

Branches (optional; a plain list is a turn as before): a turn may instead be
`{"branches": [{"when": {CONDITION: bool, ...}, "turn": [...]}, ..., {"turn": [...]}]}`, and the first
branch whose conditions all hold for the previous tool result plays (a branch without `when` always holds;
when none does, the model says so and ends). Conditions, read from the result as the model reads it:
`ok` (the tool reported success), `committed` (an automation's transaction committed), `discarded` (a
held change was discarded: by the person, a timeout, a cancel or a read-only switch) and `ran` (false when
nothing ran: a refusal such as read-only or a spent budget, no host, invalid input). So a replay can say
what really happened under every run policy:
    {"branches": [{"when": {"committed": true}, "turn": [{"text": "Committed."}]},
                  {"when": {"ran": false}, "turn": [{"text": "Nothing ran: the session is read-only."}]},
                  {"turn": [{"text": "Nothing was committed."}]}]}

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
from cloud.prompts import template
from cloud.vendors.base import ModelError, ModelTurn, TurnRequest, VendorInfo
from cloud.vendors.turn_assembler import TurnAssembler

VENDOR = "scripted"
CHARS_PER_TOKEN = 4
DELTA_CHARS = 12
OUT_OF_TURNS = "The scripted conversation has no more turns."
NO_BRANCH = "The scripted conversation has no branch for this result ({facts})."
ITEM_KINDS = ("thinking", "text", "tool_call")
CONDITIONS = ("ok", "committed", "discarded", "ran")

Turn = list[dict[str, Any]]
Script = list[Turn | dict[str, Any]]  # a turn, or {"branches": [{"when"?: {...}, "turn": [...]}, ...]}


def _check_items(items: Any, where: str) -> None:
    if not isinstance(items, list):
        raise ModelError(VENDOR, f"{where}: expected a list of items")
    for item in items:
        if not (isinstance(item, dict) and len(item) == 1 and next(iter(item)) in ITEM_KINDS):
            raise ModelError(VENDOR, f"{where}: each item is one of thinking, text, tool_call")
        call = item.get("tool_call")
        if call is not None and not (isinstance(call, dict) and isinstance(call.get("name"), str)
                                     and isinstance(call.get("input", {}), dict)):
            raise ModelError(VENDOR, f"{where}: tool_call needs a name and an object input")


def _check_branches(turn: dict[str, Any], where: str) -> None:
    branches = turn.get("branches")
    if set(turn) != {"branches"} or not isinstance(branches, list) or not branches:
        raise ModelError(VENDOR, f"{where}: a branching turn is {{\"branches\": [{{\"when\": {{...}}, \"turn\": [...]}}, ...]}}")
    for k, branch in enumerate(branches):
        here = f"{where}: branch {k}"
        if not isinstance(branch, dict) or "turn" not in branch or not set(branch) <= {"when", "turn"}:
            raise ModelError(VENDOR, f"{here}: expected {{\"when\": {{...}}, \"turn\": [...]}} (when is optional)")
        when = branch.get("when", {})
        if not isinstance(when, dict):
            raise ModelError(VENDOR, f"{here}: when must be an object of conditions")
        for key, value in when.items():
            if key not in CONDITIONS or not isinstance(value, bool):
                raise ModelError(VENDOR, f"{here}: condition {key!r}: expected one of {', '.join(CONDITIONS)} "
                                         "with true or false")
        _check_items(branch["turn"], here)


def check_script(data: Any, source: str) -> Script:
    turns = data.get("turns") if isinstance(data, dict) else None
    if not isinstance(turns, list) or not all(isinstance(t, list | dict) for t in turns):
        raise ModelError(VENDOR, f"{source}: expected {{\"turns\": [[...], ...]}}")
    for i, turn in enumerate(turns):
        if isinstance(turn, dict):
            _check_branches(turn, f"{source}: turn {i}")
        else:
            _check_items(turn, f"{source}: turn {i}")
    return turns


def _prefix(key: str) -> str:
    """The fixed words a tool message starts with (before its first placeholder)."""
    return template(key).split("{", 1)[0].rstrip(" (")


NOTHING_RAN = ("readonly", "fix_cap", "iteration_cap", "ask_without_hold", "no_host", "host_unavailable",
               "no_script_to_edit", "invalid_input", "invalid_json", "call_cancelled", "truncated_call")
DISCARDED = ("outcome_discarded", "outcome_discarded_undecided")


def result_facts(view: Sequence[dict[str, Any]]) -> dict[str, bool]:
    """What the previous tool result says, as the conditions of a branch name it (read from its words, in
    cloud/prompts/tool_messages.json, exactly as the model receives them). No tool result yet: nothing ran."""
    part = None
    for entry in reversed(view):
        if entry.get("role") == "tool":
            parts = [p for p in entry.get("content", []) if p.get("type") == "tool_result"]
            part = parts[-1] if parts else None
            break
        if entry.get("role") == "assistant":
            break
    if part is None:
        return {"ok": False, "committed": False, "discarded": False, "ran": False}
    text = "\n".join(p.get("text", "") for p in part.get("content", []) if p.get("type") == "text")
    ran = not any(text.startswith(_prefix(key)) for key in NOTHING_RAN)
    return {"ok": not part.get("is_error"), "committed": _prefix("outcome_committed") in text,
            "discarded": any(_prefix(key) in text for key in DISCARDED), "ran": ran}


def choose_turn(turn: Turn | dict[str, Any], view: Sequence[dict[str, Any]]) -> Turn:
    """The items to play: the turn itself, or its first branch whose conditions hold."""
    if isinstance(turn, list):
        return turn
    facts = result_facts(view)
    for branch in turn["branches"]:
        if all(facts[key] == value for key, value in branch.get("when", {}).items()):
            return branch["turn"]
    return [{"text": NO_BRANCH.format(facts=", ".join(f"{k}={str(v).lower()}" for k, v in facts.items()))}]


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
        self.model = str(path)
        self.spec = f"{VENDOR}:{path}"
        self.turns = load_script(self.path)

    @classmethod
    def from_turns(cls, turns: Sequence[Sequence[dict[str, Any]] | dict[str, Any]], name: str = "memory") -> ScriptedModel:
        """A script held in memory (tests, the evaluator): same format and behaviour as a file."""
        model = cls.__new__(cls)
        model.path = Path(name)
        model.model = name
        model.spec = f"{VENDOR}:{name}"
        model.turns = check_script({"turns": [t if isinstance(t, dict) else list(t) for t in turns]}, name)
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
        items = choose_turn(self.turns[index], request.transcript) if index < len(self.turns) \
            else [{"text": OUT_OF_TURNS}]
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
