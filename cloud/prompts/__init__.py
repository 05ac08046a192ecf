"""Prompts, tool-result wording and report templates live here as data files.

Two audiences: tool_messages.json holds the model's words (instructions included); person_messages.json
holds what the person reads about the same events, in plain words and never the model's instructions.
"""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path

PROMPT_DIR = Path(__file__).resolve().parent


@cache
def text(name: str) -> str:
    return (PROMPT_DIR / name).read_text(encoding="utf-8")


@cache
def _messages() -> dict[str, str]:
    return json.loads(text("tool_messages.json"))


@cache
def _person_messages() -> dict[str, str]:
    return json.loads(text("person_messages.json"))


def message(key: str, **values: object) -> str:
    """A tool-result message from tool_messages.json, with {placeholders} filled in."""
    return _messages()[key].format(**values)


def template(key: str) -> str:
    """A tool-result message as written, placeholders unfilled (to recognise it in a result's text)."""
    return _messages()[key]


def person_entry(key: str) -> dict[str, str] | None:
    """The person's entry for the event `key` (person_messages.json): {text, status?}; None if it has none."""
    return _person_messages().get(key)


def person_message(key: str, **values: object) -> str:
    """The person's words for the event `key`, with {placeholders} filled in (extra values are ignored)."""
    return _person_messages()[key]["text"].format(**values)
