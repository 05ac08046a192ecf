"""Context compaction: when the model's view nears its context window, summarise the older turns.

API (stable; the loop calls it before each model turn):

    new = yield from maybe_compact(transcript, model, system, tools, session_id, cancel,
                                   threshold=0.8, keep_recent=0.3, reported_input_tokens=None,
                                   current_script=None)

- `transcript` is the stored (full) transcript; `model` a ModelAdapter; `system`/`tools` exactly what
  the next turn will send (the summarisation call reuses them, so its prefix hits the prompt cache).
- Size of the model's view = max(chars/4 estimate, last reported input usage + estimate of what came
  after it). Reported usage is `reported_input_tokens` when given, else the `usage` dict (Usage.as_dict())
  of the last assistant entry in the view, when the loop stores one there.
- Below `threshold * model.context_window` it yields nothing and returns None.
- Otherwise it keeps the recent turns (about `keep_recent * context_window` tokens, at least the model's
  latest turn and everything after it, so a model always sees what it said last; a cut only ever falls
  before a user or assistant entry, so a tool_call always stays with its tool_result), summarises the rest with one call through the same adapter (instructions from
  cloud/prompts/compaction.md: user goal/context, done, pending, current script state), and returns
  the NEW transcript, append-only: every old entry untouched, then
      {"role": "compaction", "summary": str, "replaced": N, "model": spec, "usage": {...}, "kept": K}
  then copies of the kept recent entries, minus their stale `usage` (so `new[len(transcript):]` is exactly what to persist).
  `transcript.model_view` shows the model only the summary and what follows it. N counts the
  conversation entries the summary stands for; `usage` is the summarisation call's Usage.as_dict()
  (add it to the run's usage); K counts the kept copies.
- Yields one Metadata chunk, kind "compaction" ("Context summarised"), with replaced, tokens_before,
  tokens_after and the summary, for the person to see.
- When the model answers with no usable summary (a tool call, nothing, cancelled), or cannot be asked
  (`model.can_summarise` is False), a mechanical summary in the same sections is built from the
  transcript. Its script section is `current_script` (the session's script, anchored edits merged)
  when given, else the script the whole history's automation calls add up to (never an older one). A ModelError from the
  summarisation call propagates (the loop reports it).
"""
from __future__ import annotations

import json
import threading
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

from cloud.chunks import Chunk, metadata
from cloud.tools.edits import apply_edits
from cloud.transcript import Entry, model_view, person_view, text_of, user_text
from cloud.vendors.base import ModelAdapter, ModelTurn, TurnRequest

PROMPT_PATH = Path(__file__).parent / "prompts" / "compaction.md"
DEFAULT_THRESHOLD = 0.8
DEFAULT_KEEP_RECENT = 0.3
SUMMARY_MAX_TOKENS = 4096
CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 1600  # what a vendor-scaled image costs, roughly; its base64 length says nothing useful
EXCERPT_CHARS = 400
SCRIPT_CHARS = 6000


def _part_tokens(part: dict[str, Any]) -> int:
    if part.get("type") == "image":
        return IMAGE_TOKENS
    if part.get("type") == "tool_result":
        return sum(_part_tokens(p) for p in part.get("content", [])) + 10
    if part.get("type") in ("text", "thinking"):  # the common case, without serialising (this runs every turn)
        return (len(part.get("text", "")) + 20) // CHARS_PER_TOKEN
    return len(json.dumps(part, ensure_ascii=False)) // CHARS_PER_TOKEN


def estimate_tokens(entries: Sequence[Entry]) -> int:
    return sum(sum(_part_tokens(p) for p in e.get("content", [])) + 4 for e in entries)


def estimate_request_tokens(system: str, tools: Sequence[dict[str, Any]], view: Sequence[Entry]) -> int:
    return (len(system) + len(json.dumps(list(tools)))) // CHARS_PER_TOKEN + estimate_tokens(view)


def _reported_tokens(view: list[Entry]) -> int | None:
    for i in range(len(view) - 1, -1, -1):
        usage = view[i].get("usage") if view[i].get("role") == "assistant" else None
        if isinstance(usage, dict):
            reported = sum(int(usage.get(k, 0)) for k in ("uncached_input", "cache_read", "cache_write", "output"))
            return reported + estimate_tokens(view[i + 1:])
    return None


def _last_compaction(transcript: list[Entry]) -> int:
    return max((i for i, e in enumerate(transcript) if e.get("role") == "compaction"), default=-1)


def choose_cut(transcript: list[Entry], start: int, keep_tokens: int) -> int | None:
    """Index of the first kept entry: a user or assistant entry after `start`, keeping about
    `keep_tokens` of recent context (at least the latest turn). None when nothing worth summarising."""
    boundaries = [i for i in range(start + 1, len(transcript)) if transcript[i].get("role") in ("user", "assistant")]
    if not boundaries:
        return None
    cut = boundaries[-1]
    latest_turn = max((i for i in boundaries if transcript[i].get("role") == "assistant"), default=cut)
    cut = min(cut, latest_turn)
    boundaries = [b for b in boundaries if b <= cut]
    kept = estimate_tokens(transcript[cut:])
    for b in reversed(boundaries[:-1]):
        kept_if = kept + estimate_tokens(transcript[b:cut])
        if kept_if > keep_tokens:
            break
        cut, kept = b, kept_if
    replaced = sum(1 for e in transcript[start:cut] if e.get("role") != "compaction")
    return cut if replaced >= 2 else None


def _summary_prompt() -> str:
    return PROMPT_PATH.read_text()


def _usable_summary(turn: ModelTurn) -> str | None:
    text = turn.text.strip()
    if turn.tool_calls or turn.stop_reason in ("cancelled", "refusal") or len(text) < 40:
        return None
    return text


def script_of(entries: Sequence[Entry]) -> str:
    """The script the automation calls in `entries` add up to: a full `code` replaces it, `edits` are
    merged into it (edits that cannot be applied leave it unchanged, as they do on the host)."""
    script = ""
    for entry in entries:
        if entry.get("role") != "assistant":
            continue
        for call in (p for p in entry.get("content", []) if p.get("type") == "tool_call"):
            arguments = call.get("input") or {}
            if call.get("name") != "execute_task_automation":
                continue
            if isinstance(arguments.get("code"), str):
                script = arguments["code"]
            elif script and isinstance(arguments.get("edits"), list):
                try:
                    merged = apply_edits(script, arguments["edits"], check_syntax=False).script
                except (KeyError, TypeError, AttributeError):
                    merged = None  # edits the tool itself would have refused
                script = merged or script
    return script


def mechanical_summary(entries: Sequence[Entry], current_script: str | None = None) -> str:
    """The same four sections, built from the transcript itself (no model call)."""
    goals, done, last_text = [], [], ""
    script = current_script if current_script is not None else script_of(entries)  # entries: the whole history
    for entry in entries:
        role = entry.get("role")
        if role == "user":
            goals.append(text_of(entry)[:EXCERPT_CHARS])
        elif role == "assistant":
            last_text = text_of(entry) or last_text
        elif role == "tool":
            for result in entry.get("content", []):
                outcome = "failed" if result.get("is_error") else "ok"
                first = "".join(p.get("text", "") for p in result.get("content", []) if p.get("type") == "text")
                done.append(f"- {result.get('name', 'tool')} ({outcome}): {first.strip()[:EXCERPT_CHARS]}")
    script_text = f"```python\n{script[:SCRIPT_CHARS]}\n```" if script else "No automation script yet."
    return "\n\n".join([
        "## User goal and context\n" + ("\n".join(f"- {g}" for g in goals if g) or "- (none recorded)"),
        "## Done\n" + ("\n".join(done) or "- Nothing run yet."),
        "## Pending\n" + (last_text[:EXCERPT_CHARS * 2] or "Continue toward the goal."),
        "## Current script state\n" + script_text,
    ])


def maybe_compact(
    transcript: list[Entry],
    model: ModelAdapter,
    system: str,
    tools: Sequence[dict[str, Any]],
    session_id: str,
    cancel: threading.Event,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    keep_recent: float = DEFAULT_KEEP_RECENT,
    reported_input_tokens: int | None = None,
    current_script: str | None = None,
) -> Generator[Chunk, None, list[Entry] | None]:
    view = model_view(transcript)
    estimated = estimate_request_tokens(system, tools, view)
    reported = reported_input_tokens if reported_input_tokens is not None else _reported_tokens(view)
    size = max(estimated, reported or 0)
    if size < threshold * model.context_window:
        return None
    start = _last_compaction(transcript) + 1
    # choose_cut counts with the estimate; when reported usage says the conversation is bigger than
    # estimated (images, tokenizer differences), scale the budget into estimate units.
    conversation = estimate_tokens(view)
    actual = max(conversation, size - (estimated - conversation))
    keep_tokens = int(keep_recent * model.context_window * conversation / max(1, actual))
    cut = choose_cut(transcript, start, keep_tokens)
    if cut is None:
        return None
    older_view = model_view(transcript[:cut])
    if not model.can_summarise:
        turn = ModelTurn()  # a model that replays a fixed script, whatever it is asked
    else:
        request = TurnRequest(system=system, transcript=[*older_view, user_text(_summary_prompt())],
                              tools=tuple(tools), max_tokens=SUMMARY_MAX_TOKENS, session_id=session_id)
        turn = _run_quietly(model.stream(request, cancel))
    if current_script is None:
        # The whole history once (person_view), not the view: a script written before an earlier
        # compaction is only in the summary there, and the kept copies would merge edits twice.
        current_script = script_of(person_view(transcript))
    summary = _usable_summary(turn) or mechanical_summary(older_view, current_script)
    replaced = sum(1 for e in transcript[:cut] if e.get("role") != "compaction")
    entry: Entry = {"role": "compaction", "summary": summary, "replaced": replaced, "model": model.spec,
                    "usage": turn.usage.as_dict()}
    # Append-only: history stays as it was; the kept recent entries are repeated after the marker,
    # without their usage, which measured the context before it was summarised.
    kept = [{k: v for k, v in e.items() if k != "usage"} for e in transcript[cut:]]
    entry["kept"] = len(kept)  # lets the person's view drop the repeated copies (transcript.person_view)
    new_transcript = [*transcript, entry, *kept]
    after = estimate_request_tokens(system, tools, model_view(new_transcript))
    yield metadata("compaction", "Context summarised", replaced=replaced, tokens_before=size, tokens_after=after,
                   summary=summary, model=model.spec)
    return new_transcript


def _run_quietly(stream: Generator[Chunk, None, ModelTurn]) -> ModelTurn:
    """Run the summarisation call without showing its prose as the assistant's message."""
    while True:
        try:
            next(stream)
        except StopIteration as done:
            return done.value
