"""One MCP tool call through the loop's own tool code (cloud/tools): the same validation, policy, edits,
budgets, audit, epilogue, change report and rendering, against a store session kept per MCP connection and host.

`McpCalls.start` runs the tool's generator as a run of the deployment's run registry, like a chat-page run:
the chat page's session shows it live (its tool card, and under `ask` the Keep/Discard card of a held
change), `/api/runs` and `/api/approvals` list it, and the page's cancel and approval routes reach it. Its
chunks also go over a queue to the MCP side, which can turn an `approval_request` into an MCP elicitation
while the tool waits for the decision. The finished call is written to the session's transcript, and its
outcome is kept (by call id, and by its idempotency key) so a retry or `review_status` finds it.
"""
from __future__ import annotations

import json
import queue
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from cloud.chunks import Chunk
from cloud.config import Settings
from cloud.contract import content_hash
from cloud.hostlink import HostConnection, HostDirectory, session_link
from cloud.mcp.wording import say
from cloud.rendezvous import Delivery, ResultChannel
from cloud.runs import Run, RunRegistry
from cloud.session_refs import save_refs
from cloud.store import Store
from cloud.tools.dispatch import execute_tool
from cloud.tools.opening import open_tool_context
from cloud.transcript import tool_results
from cloud.web.quotas import QuotaExceeded, RunSlot

LOOP_TOOLS = ("execute_data_collection", "execute_task_automation", "capture_view", "lookup_api", "find_skill",
              "run_skill")
AUDIT_KIND = "mcp_call"
KEYED_TOOLS = ("execute_task_automation", "run_skill")  # the calls that change the model take an idempotency key
RELEASE_WAIT_S = 5.0
KEPT_OUTCOMES = 1000  # finished calls remembered in this process (the store keeps the rest: see `by_key`)


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
    """A tool call running as a run: chunks, then the finished CallOutcome (or the exception)."""
    user: str
    session_id: str
    name: str
    items: queue.Queue[Chunk | CallOutcome | BaseException] = field(default_factory=queue.Queue)
    cancel: threading.Event = field(default_factory=threading.Event)  # the client cancelled the call
    run: Run | None = None  # its run in the registry, once started (the chat page's cancel sets run.cancel)
    done: threading.Event = field(default_factory=threading.Event)
    outcome: CallOutcome | None = None
    failure: BaseException | None = None


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
    channel: ResultChannel
    runs: RunRegistry
    quotas: Quotas | None = None
    chat_url: str | None = None  # the chat page's address, for "decide at <link>"

    @classmethod
    def of(cls, state: Any, quotas: Quotas | None = None, chat_url: str | None = None) -> Backend:
        """From an orchestrator app's NexusState (`app.extensions["nexus"]`)."""
        return cls(state.store, state.settings, state.hosts, state.channel, state.runs, quotas, chat_url)

    def session_link(self, session_id: str) -> str:
        """Where the person opens a session on the chat page (its held change's Keep/Discard card)."""
        return f"{(self.chat_url or '').rstrip('/')}/#session={session_id}"


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
        self._last_released: dict[str, threading.Event] = {}  # session id -> its last run's `released` (see _begin)
        self._running: dict[str, _Worker] = {}  # call id -> its worker, while it runs
        self._calls: OrderedDict[str, _Worker] = OrderedDict()  # call id -> its worker, running or finished
        self._keys: dict[tuple[str, str], str] = {}  # (user, idempotency key) -> call id

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
        session_id = self.backend.store.sessions.create_session(caller.user, host_id, f"mcp:{caller.client}", {})
        if self.policy:
            self.backend.store.sessions.update_session(session_id, policy=self.policy)
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
        self.backend.store.ledger.record_scripts([{
            "session_id": session_id, "tool_call_id": call_id, "user_name": caller.user,
            "host_id": host.host_id if host else None, "host_app": host.host_app if host else None,
            "capability_version": None, "kind": AUDIT_KIND, "code": code, "sha256": content_hash(code)}])

    def start(self, caller: Caller, call_id: str, name: str, arguments: dict[str, Any],
              host_id: str | None, key: str | None = None) -> tuple[str, Iterator[Chunk | CallOutcome]]:
        """Start a loop tool call; returns its session id and an iterator of chunks ending in its CallOutcome.
        Raises Refused (or QuotaExceeded) before anything runs. `key`: the call's idempotency key (the
        caller checked `by_key` first); it is recorded with the call's arguments in the audit log."""
        host = None
        audited = {**arguments, "host": host_id, **({"idempotency_key": key} if key else {})}
        try:
            if self.backend.quotas is not None:
                self.backend.quotas.admit_call(caller.user)
            host = self.resolve_host(caller.user, host_id)
            session_id = self.session_for(caller, host.host_id)
            held = self.backend.channel.pending_tool_call(session_id)
            if held and self.backend.channel.awaiting_decision(session_id):
                raise Refused(say("held_first", tool_call_id=held, link=self.backend.session_link(session_id)))
        except (Refused, QuotaExceeded):
            self.audit(caller, None, host, call_id, name, audited)
            raise
        self.audit(caller, session_id, host, call_id, name, audited)
        worker = _Worker(caller.user, session_id, name)
        with self._lock:
            self._running[call_id] = worker
            self._calls[call_id] = worker
            while len(self._calls) > KEPT_OUTCOMES:
                old_id, old = self._calls.popitem(last=False)
                self._keys = {k: v for k, v in self._keys.items() if v != old_id}
            if key:
                self._keys[(caller.user, key)] = call_id
        try:
            self._begin(worker, session_id, call_id, name, arguments)
        except BaseException as exc:
            worker.failure = exc
            self._end(worker, call_id)
            raise
        return session_id, _drain(worker)

    def worker(self, user: str, call_id: str) -> _Worker | None:
        """The user's call, running or finished in this process."""
        with self._lock:
            found = self._calls.get(call_id)
        return found if found is not None and found.user == user else None

    def calls_of(self, user: str) -> list[tuple[str, _Worker]]:
        with self._lock:
            return [(call_id, w) for call_id, w in self._calls.items() if w.user == user]

    def by_key(self, user: str, key: str) -> _Worker | tuple[str, str] | None:
        """The user's earlier call with this idempotency key: its worker (in this process), else its session
        and call id as the audit log recorded them (an earlier process of this deployment), else None."""
        with self._lock:
            call_id = self._keys.get((user, key))
            if call_id is not None:
                return self._calls.get(call_id)
        needle = json.dumps({"idempotency_key": key})[1:-1]  # as the audit row's JSON writes it
        for row in self.backend.store.ledger.audit(user_name=user, kind=AUDIT_KIND, text=needle, limit=20):
            if row["session_id"] and json.loads(row["code"]).get("arguments", {}).get("idempotency_key") == key:
                return str(row["session_id"]), str(row["tool_call_id"])
        return None

    def session_of(self, user: str, call_id: str) -> str | None:
        """The session a call of the user's ran in, from the audit log (a call of an earlier process)."""
        for row in self.backend.store.ledger.audit(user_name=user, kind=AUDIT_KIND, limit=2000):
            if row["tool_call_id"] == call_id and row["session_id"]:
                return str(row["session_id"])
        return None

    def stored_outcome(self, session_id: str, call_id: str) -> CallOutcome | None:
        """A call finished by an earlier process: the person's result the store kept for it."""
        person = self.backend.store.results.get_result(session_id, call_id)
        if person is None:
            return None
        part = {"content": [{"type": "text", "text": str(person.get("summary", ""))}], "is_error": not person.get("ok")}
        return CallOutcome(person, part, session_id)

    def _begin(self, worker: _Worker, session_id: str, call_id: str, name: str, arguments: dict[str, Any]) -> None:
        """Start the call as a run of the registry, which drives its chunks on a thread of its own. One run at a
        time per session: the session's last run is waited for until the registry has let go of it (a moment
        after its last chunk, its lease released), so this connection's next call finds the session free and
        its lease acquired after that one's release, never deleted by it."""
        with self._session_locks[session_id]:
            last = self._last_released.get(session_id)
            if last is not None:
                last.wait(RELEASE_WAIT_S)
            run = self.backend.runs.start(session_id,
                                          lambda registered: self._drive(registered, worker, call_id, name, arguments))
            if run is None:
                raise Refused(say("session_busy", link=self.backend.session_link(session_id)))
            self._last_released[session_id] = run.released

    def _end(self, worker: _Worker, call_id: str) -> None:
        with self._lock:
            self._running.pop(call_id, None)
        worker.done.set()

    def _drive(self, run: Run, worker: _Worker, call_id: str, name: str, arguments: dict[str, Any]) -> Iterator[Chunk]:
        """The call as a run's chunks (the chat page's stream), each also handed to the MCP side."""
        store = self.backend.store
        session_id = worker.session_id
        worker.run = run
        if worker.cancel.is_set():  # cancelled before its run started
            run.cancel.set()
        try:
            row = store.sessions.get_session(session_id)
            assert row is not None
            # The client's agent runs its own loop and budgets: each call is a run of its own here
            # (the fix/iteration caps bound one run of NexusAI's loop); the script stays for edits.
            link = session_link(self.backend.hosts, self.backend.channel, row)
            ctx = open_tool_context(store, self.backend.settings, row, link, image_max_px=self.image_max_px,
                                    cancel=run.cancel)
            yield Chunk("ToolCall", name, {"tool_call_id": call_id, "name": name, "input": arguments})
            tool = execute_tool(ctx, {"id": call_id, "name": name, "input": arguments})
            while True:
                try:
                    chunk = next(tool)
                except StopIteration as done:
                    called = done.value
                    break
                worker.items.put(chunk)
                yield chunk
            worker.outcome = CallOutcome(called.person or None, called.part, session_id)
            worker.items.put(worker.outcome)  # the client need not wait for the transcript's write
            # The chat page reads the call back from the transcript once its run has gone.
            store.sessions.append_entries(session_id, [
                {"role": "assistant", "model": row["model"],
                 "content": [{"type": "tool_call", "id": call_id, "name": name, "input": arguments}]},
                tool_results([called.part])])
            yield Chunk("Complete")
        except BaseException as exc:  # handed to the caller, which reports it
            if worker.outcome is None:
                worker.failure = exc
                worker.items.put(exc)
            raise
        finally:
            self._end(worker, call_id)

    def cancel(self, call_id: str) -> bool:
        """The client cancelled the call (MCP notifications/cancelled): it ends as a chat run's cancel does,
        its script killed on the host and rolled back, a held change discarded. False if it had ended."""
        with self._lock:
            worker = self._running.get(call_id)
        if worker is None:
            return False
        worker.cancel.set()
        if worker.run is not None:
            worker.run.cancel.set()
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
