"""The adapter Protocol every vendor module implements, and the value types it exchanges with the loop."""
from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Protocol

from cloud.chunks import Chunk
from cloud.transcript import Entry


@dataclass
class Usage:
    """Normalised token accounting, the same for every vendor.

    uncached_input: input tokens billed at the full price (a vendor's input count minus its cache reads
    and writes where it includes them); cache_read / cache_write: prompt-cache hits and writes; output:
    everything generated, reasoning included; reasoning: the share of output spent on thinking, when
    the vendor reports it.
    """

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


class ModelSpecError(ValueError):
    """A model spec that cannot be used; `status` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


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
    Adapters build all of this with cloud.vendors.turn_assembler.TurnAssembler.

    Capabilities are declared here, never probed: `image_max_px` (the longest image side worth
    rendering for this model: its vendor scales anything larger down), `context_window` (tokens),
    `key_env` (the environment variable its key comes from; None when it needs none) and `configured`
    (whether this server can use the model's vendor at all), `can_summarise` (it answers what it is asked,
    so compaction may ask it for a summary; a scripted model only plays its script).
    """

    spec: str  # "vendor:model"
    vendor: str
    model: str  # the model part of the spec, as the vendor names it (no endpoint)
    context_window: int
    image_max_px: int
    key_env: str | None
    can_summarise: bool

    @property
    def configured(self) -> bool: ...

    def stream(self, request: TurnRequest, cancel: threading.Event) -> Generator[Chunk, None, ModelTurn]: ...


@dataclass(frozen=True)
class VendorInfo:
    """What the registry and the model list know about a vendor without building an adapter.

    Every vendor module declares one as `VENDOR_INFO`; `create(model)` builds an adapter from the part
    of a spec after `vendor:`; `is_configured()` says whether this server can use the vendor.
    """

    name: str
    create: Callable[[str], ModelAdapter]
    is_configured: Callable[[], bool]
    key_env: str | None  # None: the vendor needs no key
    example: str  # a spec of this vendor's form, shown to people
    default_model: str | None = None  # the spec a server uses when this is the first configured vendor
    listed: bool = True  # offered in model pickers (the scripted model is for tests and the offline demo)
    suggested: tuple[str, ...] = ()  # specs a model picker offers once the vendor is configured
