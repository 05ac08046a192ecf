"""The neutral transcript: the run's state machine, stored as-is and rebuilt into each vendor's dialect.

Entries are plain JSON-serialisable dicts:

    {"role": "user", "content": [Part, ...]}
    {"role": "assistant", "model": "vendor:model", "content": [Part, ...]}
    {"role": "tool", "content": [ToolResultPart, ...]}
    {"role": "compaction", "summary": str, "replaced": int, "model": "vendor:model"}

Parts:
    {"type": "text", "text": str}
    {"type": "thinking", "text": str, "vendor_state": {...}?}
    {"type": "tool_call", "id": str, "name": str, "input": dict, "input_error": str?, "vendor_state": {...}?}
    {"type": "image", "media_type": "image/png", "data": base64, "width": int, "height": int}
    {"type": "tool_result", "tool_call_id": str, "name": str, "content": [text and image parts], "is_error": bool}

`vendor_state` is opaque vendor data (thinking signatures, redacted thinking, reasoning items with
encrypted content, thought signatures) that must go back verbatim to the vendor that produced it.
It always holds {"vendor": NAME, ...}; an adapter ignores state of any other vendor, and drops a
thinking part whose only content is another vendor's opaque state.
A `compaction` entry replaces every entry before it for the model: see `model_view`.
"""
from __future__ import annotations

from typing import Any

Entry = dict[str, Any]


def user_text(text: str) -> Entry:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def tool_results(parts: list[dict[str, Any]]) -> Entry:
    return {"role": "tool", "content": parts}


def tool_result_part(tool_call_id: str, name: str, text: str, images: list[dict[str, Any]] | None = None,
                     is_error: bool = False) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    content.extend(images or [])
    return {"type": "tool_result", "tool_call_id": tool_call_id, "name": name, "content": content,
            "is_error": is_error}


RUN_END = "run_end"  # how a run ended, for the person (cancelled, error, its usage line): never the model's
MARKER = "marker"  # a marker the person saw mid-run (a retried model turn), where it was: never the model's
PERSON_ONLY = (RUN_END, MARKER)


def marker(kind: str, text: str) -> Entry:
    return {"role": MARKER, "kind": kind, "text": text}


def run_end(outcome: str, text: str, usage: dict[str, Any] | None, usage_line: str,
            detail: dict[str, Any] | None = None) -> Entry:
    """The person's record of how one run ended (complete, cancelled or error, with the Error chunk's text
    and metadata), so a reload shows its marker and usage line again."""
    return {"role": RUN_END, "outcome": outcome, "text": text, "detail": detail or {}, "usage": usage or {},
            "usage_line": usage_line}


def model_view(transcript: list[Entry]) -> list[Entry]:
    """What the model receives: entries after the last compaction, led by that compaction's summary."""
    transcript = [e for e in transcript if e.get("role") not in PERSON_ONLY]
    last = max((i for i, e in enumerate(transcript) if e.get("role") == "compaction"), default=None)
    if last is None:
        return list(transcript)
    marker = transcript[last]
    head = user_text("[Earlier conversation, summarised to fit the context window]\n" + marker["summary"])
    rest = transcript[last + 1:]
    if rest and rest[0].get("role") == "user":
        # Two user turns in a row are rejected by some vendors: fold the summary into the next one.
        merged = {**head, "content": head["content"] + rest[0]["content"]}
        return [merged, *rest[1:]]
    return [head, *rest]


def person_view(transcript: list[Entry]) -> list[Entry]:
    """What the person reads back: the whole history once, with each compaction marker where it cut.

    A compaction entry is followed by copies of the recent entries it kept (so `model_view` can start
    there); here the originals stay in place, the marker goes before them, and the copies are dropped.
    """
    out: list[Entry] = []
    skip = 0
    for entry in transcript:
        if skip:
            skip -= 1
            continue
        if entry.get("role") == "compaction":
            kept = int(entry.get("kept", 0))
            out.insert(len(out) - kept, entry)
            skip = kept
            continue
        out.append(entry)
    return out


def tool_calls(entry: Entry) -> list[dict[str, Any]]:
    return [p for p in entry.get("content", []) if p.get("type") == "tool_call"]


def text_of(entry: Entry) -> str:
    return "".join(p.get("text", "") for p in entry.get("content", []) if p.get("type") == "text")
