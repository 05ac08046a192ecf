"""Where a suspended tool call meets its result: one pending request per session, capacity one.

The loop opens a request, sends the command to the host, and waits. The result arrives on another
connection (the host's websocket, or a browser POST relaying it) and is delivered here. A delivery for
a request that is not pending, or that was already answered, is refused and the loop never sees it.
This in-process implementation is the embedded default; cloud/distributed/redis_rendezvous.py keeps the same
methods in Redis, and `ResultChannel` is what both are to the code that uses one.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

CANCEL_POLL_S = 0.1  # also how often a waiting call checks that its host is still there
ANSWERED_MEMORY = 64
ANSWERED_SESSIONS = 10_000


class Delivery(Enum):
    ACCEPTED = "accepted"
    NOT_PENDING = "not_pending"
    ALREADY_ANSWERED = "already_answered"
    WRONG_SENDER = "wrong_sender"


@dataclass
class _Pending:
    request_id: str
    tool_call_id: str
    host_id: str | None
    kind: str = "host"  # "host": a host's answer; "approval": the person's decision
    result: dict[str, Any] | None = None
    done: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Answer:
    result: dict[str, Any] | None
    missing: str | None = None  # why there is no result: "timeout", "cancelled" or "gone"


class ResultChannel(Protocol):
    """What a run, a host socket and a relaying browser need of the rendezvous, in one process or in Redis."""

    def open(self, session_id: str, request_id: str, tool_call_id: str, host_id: str | None,
             kind: str = "host") -> None: ...

    def pending_tool_call(self, session_id: str) -> str | None: ...

    def awaiting_decision(self, session_id: str) -> bool: ...

    def deliver_from_host(self, request_id: str, host_id: str, result: dict[str, Any],
                          kind: str = "host") -> Delivery: ...

    def deliver_tool_result(self, session_id: str, tool_call_id: str, result: dict[str, Any],
                            kind: str = "host") -> Delivery: ...

    def wait(self, session_id: str, timeout_s: float, cancel: threading.Event) -> dict[str, Any] | None: ...

    def await_answer(self, session_id: str, timeout_s: float, cancel: threading.Event,
                     alive: Callable[[], bool] | None = None) -> Answer: ...

    def close(self, session_id: str) -> None: ...


class ToolResultChannel:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}  # session_id -> the one pending request
        self._by_request: dict[str, str] = {}  # request_id -> session_id
        # session_id -> recent request/tool-call ids, for the most recently active sessions only (a
        # long-lived process would otherwise keep a list for every session that ever ran a tool)
        self._answered: OrderedDict[str, list[str]] = OrderedDict()

    def open(self, session_id: str, request_id: str, tool_call_id: str, host_id: str | None,
             kind: str = "host") -> None:
        with self._lock:
            if session_id in self._pending:
                raise RuntimeError(f"session {session_id} already has a pending request")
            self._pending[session_id] = _Pending(request_id, tool_call_id, host_id, kind)
            self._by_request[request_id] = session_id

    def pending_tool_call(self, session_id: str) -> str | None:
        with self._lock:
            pending = self._pending.get(session_id)
            return pending.tool_call_id if pending else None

    def awaiting_decision(self, session_id: str) -> bool:
        """Whether the session's run waits for the person's keep/discard."""
        with self._lock:
            pending = self._pending.get(session_id)
            return pending is not None and pending.kind == "approval" and not pending.done.is_set()

    def _accept(self, session_id: str, pending: _Pending, result: dict[str, Any]) -> Delivery:
        if pending.done.is_set():
            return Delivery.ALREADY_ANSWERED
        pending.result = result
        pending.done.set()
        return Delivery.ACCEPTED

    def deliver_from_host(self, request_id: str, host_id: str, result: dict[str, Any],
                          kind: str = "host") -> Delivery:
        """A host's answer (or, with kind "approval", a decision the person took in the host itself)."""
        with self._lock:
            session_id = self._by_request.get(request_id)
            pending = self._pending.get(session_id) if session_id else None
            if pending is None or pending.request_id != request_id or pending.kind != kind:
                return Delivery.NOT_PENDING
            if pending.host_id is not None and pending.host_id != host_id:
                return Delivery.WRONG_SENDER
            return self._accept(session_id, pending, result)

    def deliver_tool_result(self, session_id: str, tool_call_id: str, result: dict[str, Any],
                            kind: str = "host") -> Delivery:
        """A browser relaying a host's answer (or, with kind "approval", the person's decision)."""
        with self._lock:
            pending = self._pending.get(session_id)
            if pending is None or pending.tool_call_id != tool_call_id or pending.kind != kind:
                answered = tool_call_id in self._answered.get(session_id, [])
                return Delivery.ALREADY_ANSWERED if answered else Delivery.NOT_PENDING
            return self._accept(session_id, pending, result)

    def wait(self, session_id: str, timeout_s: float, cancel: threading.Event) -> dict[str, Any] | None:
        """Block until the pending request is answered; None on timeout or cancellation. Always closes it."""
        return self.await_answer(session_id, timeout_s, cancel).result

    def await_answer(self, session_id: str, timeout_s: float, cancel: threading.Event,
                     alive: Callable[[], bool] | None = None) -> Answer:
        """Block until the pending request is answered, times out, is cancelled, or `alive()` turns false
        (the party that should answer is gone). Always closes the request."""
        with self._lock:
            pending = self._pending[session_id]
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                if pending.done.is_set():
                    return Answer(pending.result)
                if cancel.is_set():
                    return Answer(None, "cancelled")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return Answer(None, "timeout")
                if alive is not None and not alive():
                    return Answer(None, "gone")
                pending.done.wait(min(remaining, CANCEL_POLL_S))
        finally:
            self.close(session_id)

    def close(self, session_id: str) -> None:
        """Forget the session's pending request; later deliveries for it are refused as already answered."""
        with self._lock:
            pending = self._pending.pop(session_id, None)
            if pending is None:
                return
            self._by_request.pop(pending.request_id, None)
            answered = self._answered.setdefault(session_id, [])
            self._answered.move_to_end(session_id)
            answered.extend([pending.request_id, pending.tool_call_id])
            del answered[:-ANSWERED_MEMORY]
            while len(self._answered) > ANSWERED_SESSIONS:
                self._answered.popitem(last=False)
