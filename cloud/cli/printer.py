"""Human-readable rendering of a run's stream chunks in a terminal.

A tool call's input streams in as escaped JSON (`{"code": "for d in doors:\\n    ..."}`); the person sees it
once it is whole, with a script printed as code, line by line, not as a JSON string.
"""
from __future__ import annotations

import json
import sys
from typing import Any, TextIO

CODE_INDENT = "    "
CODE_KEYS = ("code", "epilogue_code")  # shown as code even when one line


class Printer:
    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out if out is not None else sys.stdout
        self.last: str | None = None

    def _print(self, text: str = "", end: str = "\n") -> None:
        print(text, end=end, file=self.out, flush=True)

    def show(self, chunk: dict[str, Any]) -> None:
        kind, content, meta = chunk["type"], chunk.get("content", ""), chunk.get("metadata") or {}
        if kind != self.last and self.last in ("Thinking", "Message"):
            self._print()
        if kind == "Thinking":
            self._print(("\n[thinking] " if self.last != kind else "") + content, end="")
        elif kind == "Message":
            self._print(content, end="")
        elif kind == "ToolInputDelta":
            if self.last != kind:  # the call is being written: its input is shown whole, with the ToolCall
                self._print(f"\n[{meta.get('name')}] (writing the call...)")
        elif kind == "ToolCall":
            if self.last != "ToolInputDelta":  # else the header is on screen already
                self._print(f"\n[{meta.get('name') or content}]")
            self._print(tool_input_text(meta.get("input")))
        elif kind == "Metadata" and meta.get("kind") == "tool_result":
            # A refusal or a spent budget in the person's words; the model's instructions stay in its copy.
            shown = (meta.get("person") or {}).get("text") or content
            self._print("--- result ---\n" + shown + "\n--------------")
        elif kind == "Metadata" and meta.get("kind") in ("budget", "compaction", "reset_turn"):
            self._print(f"\n[{meta['kind']}] {content}")
        elif kind == "AgenticUsage":
            self._print(f"\n[usage] {content}")
        elif kind == "Error":
            self._print(f"\n[error] {content}")
        elif kind == "Complete":
            self._print("\n[complete]")
        self.last = kind


def tool_input_text(arguments: Any) -> str:
    """A tool call's arguments, one per line: a script (or any multi-line string) as indented code, another
    string as it is, anything else as compact JSON."""
    if not isinstance(arguments, dict):
        return CODE_INDENT + json.dumps(arguments, ensure_ascii=False)
    lines = []
    for key, value in arguments.items():
        if isinstance(value, str) and (key in CODE_KEYS or "\n" in value.strip("\n")):
            lines.append(f"{key}:")
            lines.extend(f"{CODE_INDENT}{line}".rstrip() for line in value.strip("\n").splitlines())
        elif isinstance(value, str):
            lines.append(f"{key}: {value}")
        else:
            lines.append(f"{key}: {json.dumps(value, ensure_ascii=False)}")
    return "\n".join(lines)
