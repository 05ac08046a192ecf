"""Prompts, tool-result wording and report templates live here as data files."""
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


def message(key: str, **values: object) -> str:
    """A tool-result message from tool_messages.json, with {placeholders} filled in."""
    return _messages()[key].format(**values)
