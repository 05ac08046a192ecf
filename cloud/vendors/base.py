"""The adapter Protocol every vendor module implements, and the value types it exchanges with the loop."""
from __future__ import annotations

import threading
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, Protocol

from cloud.chunks import Chunk
from cloud.transcript import Entry


@dataclass
class Usage:
    """Normalised token accounting (see shared/notes/vendors.md for each vendor's fields)."""

    uncached_input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    reasoning: int = 0

    def add(self, other: Usage) -> None:
        self.uncached_input += other.uncached_input
        self.cache_read += other.cache_read
        self.cache_write += other.cache_write
        self.output += other.output
        self.reasoning += other.reasoning

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)

    @property
    def total_input(self) -> int:
        return self.uncached_input + self.cache_read + self.cache_write


@dataclass(frozen=True)
class TurnRequest:
    system: str
    transcript: list[Entry]  # already the model's view (see transcript.model_view)
    tools: tuple[dict[str, Any], ...]  # canonical definitions {name, description, input_schema}
    max_tokens: int
    session_id: str  # stable per conversation: prompt-cache keys, deterministic ids


@dataclass
class ModelTurn:
    """One finished assistant turn: its neutral parts (in order), why it stopped, and what it cost."""

    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "end_turn"  # end_turn | tool_use | max_tokens | refusal | ...
    usage: Usage = field(default_factory=Usage)

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return [p for p in self.content if p.get("type") == "tool_call"]

    @property
    def text(self) -> str:
        return "".join(p.get("text", "") for p in self.content if p.get("type") == "text")


class ModelError(Exception):
    """A model call that failed for good (retries exhausted, or not retryable)."""

    def __init__(self, vendor: str, message: str, status: int | None = None, retry_after: float | None = None):
        self.vendor, self.status, self.retry_after = vendor, status, retry_after
        detail = f"{vendor}: {message}"
        if status is not None:
            detail += f" (status {status})"
        if retry_after is not None:
            detail += f" (retry after {retry_after:g} s)"
        super().__init__(detail)


class ModelAdapter(Protocol):
    """One vendor model. `stream` yields chunks as they arrive and *returns* the finished ModelTurn.

    Chunks: Thinking / Message deltas, ToolInputDelta {tool_call_id, name} with partial JSON in content,
    ToolCall {tool_call_id, name, input} once a call is complete, Metadata `reset_turn` before a retry
    that follows partial output. A tool call whose arguments are not valid JSON is still returned, with
    `input: {}` and `input_error` explaining the problem (the loop tells the model; it does not crash).
    Raise ModelError when the call fails for good. Usage is returned, not yielded: the loop flushes it.
    """

    spec: str  # "vendor:model"
    vendor: str
    context_window: int

    def stream(self, request: TurnRequest, cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]: ...
