"""Human-readable rendering of a run's stream chunks in a terminal."""
from __future__ import annotations

from typing import Any


class Printer:
    def __init__(self) -> None:
        self.last = None

    def show(self, chunk: dict[str, Any]) -> None:
        kind, content, meta = chunk["type"], chunk.get("content", ""), chunk.get("metadata") or {}
        if kind != self.last and self.last in ("Thinking", "Message", "ToolInputDelta"):
            print(flush=True)
        if kind == "Thinking":
            print(("\n[thinking] " if self.last != kind else "") + content, end="", flush=True)
        elif kind == "Message":
            print(content, end="", flush=True)
        elif kind == "ToolInputDelta":
            if self.last != kind:
                print(f"\n[{meta.get('name')}] ", end="")
            print(content, end="", flush=True)
        elif kind == "Metadata" and meta.get("kind") == "tool_result":
            print("\n--- result ---\n" + content + "\n--------------")
        elif kind == "Metadata" and meta.get("kind") in ("budget", "compaction", "reset_turn"):
            print(f"\n[{meta['kind']}] {content}")
        elif kind == "AgenticUsage":
            print(f"\n[usage] {content}")
        elif kind == "Error":
            print(f"\n[error] {content}")
        elif kind == "Complete":
            print("\n[complete]")
        self.last = kind
