"""The stream chunk union (shared_contract/stream_chunk.json): the only thing the browser sees of a run."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ChunkType = Literal[
    "Metadata", "Thinking", "Message", "ToolCall", "ToolInputDelta", "Complete", "Error", "AgenticUsage"
]


@dataclass(frozen=True)
class Chunk:
    type: ChunkType
    content: str = ""
    metadata: dict[str, Any] | None = field(default=None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "content": self.content}
        if self.metadata is not None:
            out["metadata"] = self.metadata
        return out


def metadata(kind: str, content: str = "", **fields: Any) -> Chunk:
    return Chunk("Metadata", content, {"kind": kind, **fields})


def error(message: str, **fields: Any) -> Chunk:
    return Chunk("Error", message, fields or None)
