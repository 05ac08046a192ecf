"""What every tool handler gets (the run's session, store, host link and settings) and the plain result."""
from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from cloud import chunks
from cloud.chunks import Chunk
from cloud.config import Settings
from cloud.hostlink import CANCELLED, GONE, UNAVAILABLE, HostLink, Reply
from cloud.prompts import message
from cloud.session import Outcome, Session
from cloud.store import Store
from cloud.tools.result import ToolResult
from cloud.transcript import tool_result_part

ToolOutput = Generator[Chunk, None, dict[str, Any]]  # chunks for the person; returns the model's result part


@dataclass
class ToolContext:
    store: Store
    host: HostLink | None
    settings: Settings
    session: Session
    cancel: threading.Event
    image_max_px: int  # the longest side worth rendering for the run's model
    save_state: Callable[[], None]
    # The size an image of (width, height) reaches the model at, after its vendor's scaling.
    image_fit: Callable[[int, int], tuple[int, int]] = field(default=lambda width, height: (width, height))

    def record(self, tool: str, outcome: Outcome, script: str | None = None) -> None:
        """Record what a tool call did and persist it: the only path by which tools change session state."""
        self.session.state.record(tool, outcome, script)
        self.save_state()


@dataclass(frozen=True)
class Called:
    """A tool call's two copies: the model's (a tool_result part) and the person's (the `tool_result` chunk)."""
    part: dict[str, Any]
    person: dict[str, Any]

    @property
    def ran(self) -> bool:
        """A script ran on the host (a refusal, a cap or a lost host ran nothing)."""
        return "mode" in self.person


def with_person(output: ToolOutput) -> Generator[Chunk, None, Called]:
    """Pass a tool's chunks on and return both copies of its result, so no caller reads back what the tool
    has just saved."""
    person: dict[str, Any] = {}
    while True:
        try:
            chunk = next(output)
        except StopIteration as done:
            return Called(done.value, person)
        if chunk.type == "Metadata" and (chunk.metadata or {}).get("kind") == "tool_result":
            person = {k: v for k, v in (chunk.metadata or {}).items() if k != "kind"}
        yield chunk


def plain(call: dict[str, Any], text: str, is_error: bool = True) -> ToolOutput:
    """A text-only result: the person and the model read the same words."""
    yield chunks.metadata("tool_result", text, **ToolResult(call["id"], call["name"], not is_error, text).to_json())
    return tool_result_part(call["id"], call["name"], text, is_error=is_error)


def no_reply_text(ctx: ToolContext, reply: Reply) -> str:
    """Why a command has no usable answer, in the model's words."""
    if reply.missing == UNAVAILABLE:
        return message("host_unavailable", detail=reply.detail)
    if reply.missing == GONE:
        return message("host_gone")
    if reply.missing == CANCELLED:
        return message("call_cancelled_in_flight")
    if reply.message is not None and reply.message.get("type") == "error":
        return message("host_error", detail=reply.message.get("message", "unknown error"))
    if reply.message is not None:
        return message("unexpected_reply", kind=reply.message.get("type"))
    return message("no_result", minutes=round(ctx.settings.tool_timeout_s / 60, 1))
