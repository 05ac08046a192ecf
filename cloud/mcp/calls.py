"""One MCP tool call through the loop's own tool code (cloud/tools): the same validation, policy, edits,
budgets, audit, epilogue, change report and rendering, against a store session kept per MCP client and host.

`McpCalls.call` runs the tool's generator on a worker thread and hands its chunks over a queue, so the
async side can turn an `approval_request` into an MCP elicitation while the tool waits for the decision.
"""
from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from cloud.chunks import Chunk
from cloud.config import Settings
from cloud.contract import content_hash
from cloud.hostlink import HostConnection, HostDirectory, session_link
from cloud.mcp.wording import say
from cloud.rendezvous import Delivery, ToolResultChannel
from cloud.runs import RunRegistry
from cloud.session_refs import save_refs
from cloud.store import Store
from cloud.tools.dispatch import execute_tool
from cloud.tools.opening import open_tool_context
from cloud.web.quotas import QuotaExceeded, RunSlot

LOOP_TOOLS = ("execute_data_collection", "execute_task_automation", "capture_view", "lookup_api", "find_skill",
              "run_skill")
AUDIT_KIND = "mcp_call"


@dataclass(frozen=True)
class Caller:
    """Who makes an MCP call, over which connection: the user (the token's, or the stdio server's), the
    client's own name and version (as it said in `initialize`: recorded, never trusted as an identity) and
    the transport's session (the HTTP `Mcp-Session-Id`, or one stdio process) that store sessions are keyed on."""
    user: str
    client: str
    client_version: str
    connection: str


class Refused(Exception):
    """A call that cannot go ahead, with the reason in the caller's words."""


@dataclass
class CallOutcome:
    """A finished tool call: the person's full result (structured content) and the model's capped part."""
    person: dict[str, Any] | None
    part: dict[str, Any]
    session_id: str

    @property
    def text(self) -> str:
        return "\n".join(p["text"] for p in self.part["content"] if p.get("type") == "text")

    @property
    def images(self) -> list[dict[str, Any]]:
        return [p for p in self.part["content"] if p.get("type") == "image"]

    @property
    def is_error(self) -> bool:
        return bool(self.part.get("is_error"))


@dataclass
class _Worker:
    """A tool call running on its own thread: chunks, then the finished CallOutcome (or the exception)."""
    items: queue.Queue[Chunk | CallOutcome | BaseException] = field(default_factory=queue.Queue)
    cancel: threading.Event = field(default_factory=threading.Event)  # the client cancelled the call


class Quotas(Protocol):
    """The per-user quotas a deployment's endpoint enforces (cloud/mcp/quotas.py); each raises QuotaExceeded."""

    def admit_call(self, user: str) -> None: ...

    def admit_session(self, user: str) -> None: ...

    def admit_run(self, user: str) -> RunSlot: ...


@dataclass
class Backend:
    """What the MCP server shares with the orchestrator it sits in: the store, the hosts, the rendezvous,
    the runs in progress, and (on a deployment's endpoint) the users' quotas."""
    store: Store
    settings: Settings
    hosts: HostDirectory
    channel: ToolResultChannel
    runs: RunRegistry
    quotas: Quotas | None = None

    @classmethod
    def of(cls, state: Any, quotas: Quotas | None = None) -> Backend:
        """From an orchestrator app's NexusState (`app.extensions["nexus"]`)."""
        return cls(state.store, state.settings, state.hosts, state.channel, state.runs, quotas)


class BackendSource(Protocol):
    def get(self) -> Backend:
        """The backend, waiting for it if it is still starting; Refused if it cannot be had."""


@dataclass
class Ready:
    """A backend that is up already (a deployment's endpoint)."""
    backend: Backend

    def get(self) -> Backend:
        return self.backend


class McpCalls:
    def __init__(self, backend: Backend, image_max_px: int | None = None, policy: str | None = None,
                 refs: list[dict[str, str]] | None = None) -> None:
        self.backend, self.policy = backend, policy  # policy: for the sessions created here (None: auto)
        self.refs = refs or []  # reference models of the sessions created here (nexus mcp --ref)
        self.image_max_px = image_max_px or backend.settings.image_max_px
        self._lock = threading.Lock()
        self._sessions: dict[tuple[str, str, str], str] = {}  # (user, host, connection) -> session id
        self._session_locks: dict[str, threading.Lock] = {}  # one call at a time per session (capacity one)
        self._running: dict[str, _Worker] = {}  # call id -> its worker, while it runs

    def hosts_for(self, user: str) -> list[HostConnection]:
        return self.backend.hosts.for_user(user)

    def resolve_host(self, user: str, host_id: str | None) -> HostConnection:
        """The user's host named `host_id`, or the only one connected. Another user's host is unknown."""
        hosts = self.hosts_for(user)
        known = ", ".join(h.host_id for h in hosts) or "none"
        if host_id:
            for connection in hosts:
                if connection.host_id == host_id:
                    return connection
            raise Refused(say("unknown_host", host=host_id, known=known))
        if not hosts:
            raise Refused(say("no_host"))
        if len(hosts) > 1:
            raise Refused(say("choose_host", known=known))
        return hosts[0]

    def session_for(self, caller: Caller, host_id: str) -> str:
        """The store session this connection's calls on this host are recorded in (visible in the chat page and
        the admin console; anchored edits apply to the script it last ran there). One per transport session:
        two connections of the same client program never share one."""
        key = (caller.user, host_id, caller.connection)
        with self._lock:
            if key in self._sessions:
                return self._sessions[key]
        if self.backend.quotas is not None:
            self.backend.quotas.admit_session(caller.user)
        session_id = self.backend.store.create_session(caller.user, host_id, f"mcp:{caller.client}", {})
        if self.policy:
            self.backend.store.update_session(session_id, policy=self.policy)
        if self.refs:
            save_refs(self.backend.store, session_id, self.refs)
        with self._lock:
            self._sessions.setdefault(key, session_id)
            self._session_locks.setdefault(self._sessions[key], threading.Lock())
            return self._sessions[key]

    def audit(self, caller: Caller, session_id: str | None, host: HostConnection | None, call_id: str,
              tool: str, arguments: dict[str, Any]) -> None:
        """Every MCP call, as an audit row: what was asked, by whom, from which client (name and version),
        with its sha256."""
        code = json.dumps({"tool": tool, "client": caller.client, "client_version": caller.client_version,
                           "arguments": arguments}, sort_keys=True)
        self.backend.store.record_scripts([{
            "session_id": session_id, "tool_call_id": call_id, "user_name": caller.user,
            "host_id": host.host_id if host else None, "host_app": host.host_app if host else None,
            "capability_version": None, "kind": AUDIT_KIND, "code": code, "sha256": content_hash(code)}])

    def start(self, caller: Caller, call_id: str, name: str, arguments: dict[str, Any],
              host_id: str | None) -> tuple[str, Iterator[Chunk | CallOutcome]]:
        """Start a loop tool call; returns its session id and an iterator of chunks ending in its CallOutcome.
        Raises Refused (or QuotaExceeded) before anything runs."""
        host = None
        try:
            if self.backend.quotas is not None:
                self.backend.quotas.admit_call(caller.user)
            host = self.resolve_host(caller.user, host_id)
            session_id = self.session_for(caller, host.host_id)
        except (Refused, QuotaExceeded):
            self.audit(caller, None, host, call_id, name, {**arguments, "host": host_id})
            raise
        self.audit(caller, session_id, host, call_id, name, {**arguments, "host": host_id})
        worker = _Worker()
        with self._lock:
            self._running[call_id] = worker
        thread = threading.Thread(target=self._run, args=(worker, session_id, call_id, name, arguments),
                                  name=f"mcp-{name}", daemon=True)
        thread.start()
        return session_id, _drain(worker)

    def _run(self, worker: _Worker, session_id: str, call_id: str, name: str, arguments: dict[str, Any]) -> None:
        store = self.backend.store
        try:
            with self._session_locks[session_id]:
                row = store.get_session(session_id)
                assert row is not None
                # The client's agent runs its own loop and budgets: each call is a run of its own here
                # (the fix/iteration caps bound one run of NexusAI's loop); the script stays for edits.
                link = session_link(self.backend.hosts, self.backend.channel, row)
                ctx = open_tool_context(store, self.backend.settings, row, link, image_max_px=self.image_max_px,
                                        cancel=worker.cancel)
                tool = execute_tool(ctx, {"id": call_id, "name": name, "input": arguments})
                while True:
                    try:
                        chunk = next(tool)
                    except StopIteration as done:
                        called = done.value
                        break
                    worker.items.put(chunk)
                worker.items.put(CallOutcome(called.person or None, called.part, session_id))
        except BaseException as exc:  # handed to the caller, which reports it
            worker.items.put(exc)
        finally:
            with self._lock:
                self._running.pop(call_id, None)

    def cancel(self, call_id: str) -> bool:
        """The client cancelled the call (MCP notifications/cancelled): it ends as a chat run's cancel does,
        its script killed on the host and rolled back, a held change discarded. False if it had ended."""
        with self._lock:
            worker = self._running.get(call_id)
        if worker is None:
            return False
        worker.cancel.set()
        return True

    def decide(self, session_id: str, call_id: str, decision: dict[str, Any], wait_s: float = 30.0) -> bool:
        """Deliver the person's decision on a held automation, once the tool waits for it."""
        stop = threading.Event()
        deadline = wait_s
        while deadline > 0:
            delivery = self.backend.channel.deliver_tool_result(session_id, call_id, decision, kind="approval")
            if delivery is Delivery.ACCEPTED:
                return True
            if delivery is Delivery.ALREADY_ANSWERED:
                return False
            stop.wait(0.02)
            deadline -= 0.02
        return False


def _drain(worker: _Worker) -> Iterator[Chunk | CallOutcome]:
    while True:
        item = worker.items.get()
        if isinstance(item, BaseException):
            raise item
        yield item
        if isinstance(item, CallOutcome):
            return
