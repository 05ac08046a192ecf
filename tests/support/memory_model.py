"""A scripted model fed from an in-memory list of turns (same format and behaviour as `scripted:PATH`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from cloud.vendors.scripted import ScriptedModel


class MemoryModel(ScriptedModel):
    def __init__(self, turns: list[list[dict[str, Any]]], name: str = "memory") -> None:
        self.path = Path(name)
        self.spec = f"scripted:{name}"
        self.turns = turns
