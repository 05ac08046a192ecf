"""The host seam: connected host runtimes, and the one door a run uses to talk to its host.

`HostLink` is everything a run needs from a host: its hello, `ask` (send one command, wait for its reply)
and `await_decision` (wait for the person's keep/discard). The link owns the request ids, the timeouts,
cancellation and what happens when the host goes away. A cancelled run's script is aborted, not left
running: the host is sent `abort` for the execute in flight (kill the script, roll back, discard a hold) and
the call waits a little longer for the host's own account of what it stopped. Two implementations: `WebSocketHostLink` reaches a
host connected to this server's `/ws/host` (the directory below plus the rendezvous), and
`InProcessHostLink` serves a host runtime object directly, for tests and for embedding the core.

The directory is a dictionary of live connections in one process; with several server processes, `send`
would publish to the process that owns the host's websocket, behind the same methods.
"""
from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from cloud.hosts.hello import Hello
from cloud.hosts.registry import host_labels
from cloud.rendezvous import Answer, ResultChannel
from shared_contract.validate import ContractError, validate_host_message

# Why a command got no reply, as `Reply.missing`.
UNAVAILABLE = "unavailable"  # it could not be sent: the host is not connected
TIMEOUT = "timeout"
CANCELLED = "cancelled"
GONE = "gone"  # the host disconnected while the command was out and did not come back in time
RECONNECT_GRACE_S = 2.0  # a host that drops its socket gets this long to reconnect before its call fails
ABORT_CAPABILITY = "abort"  # hosts that say so in their hello are sent `abort` for a cancelled execute
ABORT_REPLY_S = 10.0  # after an abort, how long a call waits for the host to say what it stopped

# One request-id scheme for every command: `<about>.<step>`. A decide reuses its execute's id on purpose:
# the host keys the held transaction by it, and a decision taken in the host comes back under it.
STEPS = {"execute": "run", "decide": "run", "export_view": "view", "context": "ctx"}


class HostUnavailable(RuntimeError):
    pass


IDLE, BUSY, HELD = "idle", "busy", "held"
STALE_AFTER_S = 30.0  # an activity whose `until` passed this long ago is no longer reported (its process died)


@dataclass(frozen=True)
class HostActivity:
    """What a host is doing for a run: running a script (busy) or holding a change for a decision (held)."""

    state: str = IDLE
    session_id: str | None = None
    tool_call_id: str | None = None
    request_id: str | None = None
    since: float | None = None  # epoch seconds
    until: float | None = None  # busy: the script's deadline; held: when the wait for a decision ends

    def as_json(self) -> dict[str, Any]:
        return {"state": self.state, "session_id": self.session_id, "tool_call_id": self.tool_call_id,
                "since": self.since, "until": self.until}

    @staticmethod
    def from_json(data: dict[str, Any]) -> HostActivity:
        return HostActivity(data.get("state", IDLE), data.get("session_id"), data.get("tool_call_id"),
                            data.get("request_id"), data.get("since"), data.get("until"))

    def current(self) -> HostActivity:
        if self.until is not None and time.time() > self.until + STALE_AFTER_S:
            return HostActivity()
        return self


@dataclass
class HostConnection:
    host_id: str
    user_name: str
    hello: Hello  # parsed once, when the host connects
    send_json: Callable[[dict[str, Any]], None]
    connected_at: float = field(default_factory=time.time)
    last_seen: float = field(default_factory=time.time)
    send_lock: threading.Lock = field(default_factory=threading.Lock)
    doctor: dict[str, Any] | None = None  # the host's last NexusAI Doctor report (doctor_result), in memory

    @property
    def host_app(self) -> str:
        return self.hello["host_app"]

    def describe(self) -> dict[str, Any]:
        return {"host_id": self.host_id, "user": self.user_name, "host_app": self.host_app,
                "host_version": self.hello.get("host_version"), "runtime_version": self.hello.get("runtime_version"),
                "python_version": self.hello.get("python_version"), "document": self.hello.get("document", {}),
                "connected_at": self.connected_at, "last_seen": self.last_seen, "doctor": self.doctor,
                **host_labels(self.host_app)}


class HostDirectory:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hosts: dict[str, HostConnection] = {}
        self._owners: dict[str, str] = {}  # host_id -> user, remembered across reconnects
        self._on_connect: dict[str, list[dict[str, Any]]] = {}  # host_id -> commands for when it next connects
        self._activity: dict[str, HostActivity] = {}  # host_id -> what it does for a run now

    def register(self, user_name: str, hello: dict[str, Any], send_json: Callable[[dict[str, Any]], None]) -> HostConnection:
        with self._lock:
            wanted = hello.get("host_id")
            # A reconnecting runtime keeps its id, but only its own user may reclaim it.
            if wanted and self._owners.get(wanted, user_name) == user_name:
                host_id = wanted
            else:
                host_id = "h_" + uuid.uuid4().hex[:12]
            connection = HostConnection(host_id, user_name, Hello.parse(hello), send_json)
            self._hosts[host_id] = connection
            self._owners[host_id] = user_name
            return connection

    def send_on_connect(self, host_id: str, message: dict[str, Any]) -> None:
        """Queue a command for the host's next connection (e.g. a discard for what a restart left held)."""
        with self._lock:
            self._on_connect.setdefault(host_id, []).append(message)

    def take_on_connect(self, host_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return self._on_connect.pop(host_id, [])

    def unregister(self, connection: HostConnection) -> None:
        with self._lock:
            if self._hosts.get(connection.host_id) is connection:
                del self._hosts[connection.host_id]
                self._owners.pop(connection.host_id, None)  # the store keeps ownership; this map: live hosts

    def get(self, host_id: str | None) -> HostConnection | None:
        with self._lock:
            return self._hosts.get(host_id) if host_id else None

    def for_user(self, user_name: str) -> list[HostConnection]:
        with self._lock:
            return [h for h in self._hosts.values() if h.user_name == user_name]

    def all(self) -> list[HostConnection]:
        with self._lock:
            return list(self._hosts.values())

    def owner(self, host_id: str) -> str | None:
        with self._lock:
            return self._owners.get(host_id)

    def note_activity(self, host_id: str, activity: HostActivity, replacing: str | None = None) -> None:
        """Record what the host does now; with `replacing`, only if its current activity is that request's
        (a late reply for one call never clears another call's state)."""
        with self._lock:
            if replacing is not None and self._activity.get(host_id, HostActivity()).request_id != replacing:
                return
            if activity.state == IDLE:
                self._activity.pop(host_id, None)
            else:
                self._activity[host_id] = activity

    def activity(self, host_id: str) -> HostActivity:
        with self._lock:
            return self._activity.get(host_id, HostActivity()).current()

    def describe(self, connection: HostConnection) -> dict[str, Any]:
        """A host for the host lists: its connection, and what it does now (busy, held or idle)."""
        return {**connection.describe(), "activity": self.activity(connection.host_id).as_json()}

    def send(self, host_id: str, message: dict[str, Any]) -> HostConnection:
        connection = self.get(host_id)
        if connection is None:
            raise HostUnavailable(f"host {host_id} is not connected")
        try:
            with connection.send_lock:
                connection.send_json(message)
        except Exception as exc:  # a dead socket surfaces here
            raise HostUnavailable(f"host {host_id} could not be reached: {exc}") from exc
        return connection


@dataclass(frozen=True)
class Reply:
    message: dict[str, Any] | None  # the host's reply, None when nothing came back
    request_id: str
    missing: str | None = None  # UNAVAILABLE, TIMEOUT, CANCELLED or GONE when message is None
    detail: str = ""


def request_id_for(command: dict[str, Any], about: str | None) -> str:
    return f"{about or 'r_' + uuid.uuid4().hex[:12]}.{STEPS.get(command['type'], command['type'])}"


class HostLink(Protocol):
    """The one door between a run and its host."""

    host_id: str
    user_name: str

    @property
    def hello(self) -> Hello:
        """What the host said about itself (raises HostUnavailable if it never connected)."""
        ...

    @property
    def host_app(self) -> str: ...

    def connected(self) -> bool: ...

    def ask(self, command: dict[str, Any], timeout_s: float, cancel: threading.Event,
            about: str | None = None) -> Reply:
        """Send one command (its request id is set here, from `about`, usually the tool call id) and wait
        for the host's reply to it."""
        ...

    def await_decision(self, about: str, timeout_s: float, cancel: threading.Event) -> dict[str, Any] | None:
        """Wait for the keep/discard decision on the execute `about` held open: the person's (from the
        page) or one taken in the host itself. None when nobody decided in time."""
        ...


class WebSocketHostLink:
    """A session's host on this server's websocket: looked up by id on each call, so a host that
    reconnects mid-run is used again; answers meet the waiting call in the rendezvous."""

    def __init__(self, hosts: HostDirectory, channel: ResultChannel, host_id: str, user_name: str,
                 session_id: str) -> None:
        self.hosts, self.channel = hosts, channel
        self.host_id, self.user_name, self.session_id = host_id, user_name, session_id
        self._hello: Hello | None = None  # the last hello seen, kept while the host reconnects

    def _connection(self) -> HostConnection | None:
        connection = self.hosts.get(self.host_id)
        if connection is None or connection.user_name != self.user_name:
            return None
        self._hello = connection.hello
        return connection

    @property
    def hello(self) -> Hello:
        self._connection()
        if self._hello is None:
            raise HostUnavailable(f"host {self.host_id} has not connected")
        return self._hello

    @property
    def host_app(self) -> str:
        return self.hello.host_app

    def connected(self) -> bool:
        return self._connection() is not None

    def ask(self, command: dict[str, Any], timeout_s: float, cancel: threading.Event,
            about: str | None = None) -> Reply:
        request_id = request_id_for(command, about)
        self.channel.open(self.session_id, request_id, about or request_id, self.host_id)
        if self._connection() is None:
            self.channel.close(self.session_id)
            return Reply(None, request_id, UNAVAILABLE, f"host {self.host_id} is not connected")
        try:
            self.hosts.send(self.host_id, {**command, "request_id": request_id})
        except HostUnavailable as exc:
            self.channel.close(self.session_id)
            return Reply(None, request_id, UNAVAILABLE, str(exc))
        if command["type"] == "execute":
            now = time.time()
            self.hosts.note_activity(self.host_id, HostActivity(
                BUSY, self.session_id, about, request_id, now, now + float(command.get("timeout_s") or timeout_s)))
            if self.hello.has(ABORT_CAPABILITY):
                cancel = CancelThenAbort(cancel, lambda: abort_on_host(self.hosts, self.host_id, request_id))
        presence = HostPresence(self.hosts, self.host_id)
        reply = _reply(request_id, self.channel.await_answer(self.session_id, timeout_s, cancel, presence))
        if command["type"] in ("execute", "decide"):
            held = bool(reply.message and reply.message.get("held"))
            self.hosts.note_activity(self.host_id, HostActivity(HELD, self.session_id, about, request_id, time.time())
                                     if held else HostActivity(), replacing=request_id)
        return reply

    def await_decision(self, about: str, timeout_s: float, cancel: threading.Event) -> dict[str, Any] | None:
        request_id = request_id_for({"type": "decide"}, about)
        now = time.time()
        self.hosts.note_activity(self.host_id, HostActivity(HELD, self.session_id, about, request_id, now,
                                                            now + timeout_s))
        self.channel.open(self.session_id, request_id, about, self.host_id, kind="approval")
        presence = HostPresence(self.hosts, self.host_id)
        return self.channel.await_answer(self.session_id, timeout_s, cancel, presence).result


class HostPresence:
    """Whether a waiting call's host is still there: calling it is False once the host has been gone (not
    reconnected) for RECONNECT_GRACE_S. `missing`: it was not connected at the last look (a waiting call
    then looks again within a second; else it may wait for the host's disconnection to wake it)."""

    def __init__(self, hosts: HostDirectory, host_id: str) -> None:
        self.hosts, self.host_id = hosts, host_id
        self._gone_since: float | None = None

    @property
    def missing(self) -> bool:
        return self._gone_since is not None

    def __call__(self) -> bool:
        if self.hosts.get(self.host_id) is not None:
            self._gone_since = None
            return True
        if self._gone_since is None:
            self._gone_since = time.monotonic()
        return time.monotonic() - self._gone_since < RECONNECT_GRACE_S


class CancelThenAbort:
    """Stands in for a run's cancel flag while an execute is out on the host (anything with `is_set` will do
    for a wait). The first time the run's cancel is seen, the host is told to abort the execute, and the wait
    goes on for up to ABORT_REPLY_S for the host's reply saying what it stopped; only then, or at once when
    the abort could not be sent, does the wait count as cancelled."""

    def __init__(self, cancel: threading.Event, abort: Callable[[], bool], grace_s: float = ABORT_REPLY_S) -> None:
        self.cancel, self._abort, self._grace_s = cancel, abort, grace_s
        self._until: float | None = None

    @property
    def aborting(self) -> bool:
        """The abort is out: the wait goes on for the host's reply (looked at often, until its grace ends)."""
        return self._until is not None

    def is_set(self) -> bool:
        if not self.cancel.is_set():
            return False
        if self._until is None:
            self._until = time.monotonic() + (self._grace_s if self._abort() else 0.0)
        return time.monotonic() >= self._until


def abort_on_host(hosts: HostDirectory, host_id: str, request_id: str) -> bool:
    """Tell the host to stop `request_id` (through any live process, with several); True when it was sent. A
    host that is not connected is told when it next connects: whatever the call left there goes."""
    abort = {"type": "abort", "request_id": request_id}
    try:
        hosts.send(host_id, abort)
        return True
    except HostUnavailable:
        hosts.send_on_connect(host_id, abort)
        return False


def _reply(request_id: str, answer: Answer) -> Reply:
    if answer.result is not None and answer.result.get("type") == "aborted":
        # The abort found nothing to stop: the reply itself never came (or came and was lost).
        return Reply(None, request_id, CANCELLED, answer.result.get("message", ""))
    if answer.result is not None:
        return Reply(answer.result, request_id)
    return Reply(None, request_id, answer.missing or TIMEOUT)


class LocalHost(Protocol):
    """A host runtime object served in-process: its hello message, and one reply per command (blocking)."""

    hello: dict[str, Any]

    def handle(self, command: dict[str, Any]) -> dict[str, Any]: ...


class InProcessHostLink:
    """Serves a host runtime object directly, no socket: for tests and for embedding the core.

    Each command runs on a worker thread so timeouts and cancellation behave as over a websocket. The
    embedder (or a test) delivers a decision with `decide(about, decision)`.
    """

    def __init__(self, host: LocalHost, user_name: str, host_id: str = "local") -> None:
        self.host, self.user_name, self.host_id = host, user_name, host_id
        self._hello = Hello.parse(host.hello)  # checked against the contract, like a websocket hello
        self._lock = threading.Lock()
        self._decisions: dict[str, tuple[threading.Event, list[dict[str, Any]]]] = {}
        self.closed = False

    @property
    def hello(self) -> Hello:
        return self._hello

    @property
    def host_app(self) -> str:
        return self._hello.host_app

    def connected(self) -> bool:
        return not self.closed

    def close(self) -> None:
        """The host is gone: calls in flight fail at once, later ones are unavailable."""
        self.closed = True

    def ask(self, command: dict[str, Any], timeout_s: float, cancel: threading.Event,
            about: str | None = None) -> Reply:
        request_id = request_id_for(command, about)
        if self.closed:
            return Reply(None, request_id, UNAVAILABLE, f"host {self.host_id} is not connected")
        done, box = threading.Event(), []

        def serve() -> None:
            try:
                box.append(checked_reply(self.host.handle({**command, "request_id": request_id}), request_id))
            except Exception as exc:  # the host's own failure is an error reply, as a runtime would send
                box.append({"type": "error", "request_id": request_id, "message": f"{type(exc).__name__}: {exc}"})
            done.set()

        threading.Thread(target=serve, name=f"local-host-{request_id}", daemon=True).start()
        answer = _wait(done, timeout_s, cancel, lambda: not self.closed)
        return _reply(request_id, Answer(box[0] if box and answer is None else None, answer))

    def await_decision(self, about: str, timeout_s: float, cancel: threading.Event) -> dict[str, Any] | None:
        event, box = threading.Event(), []
        with self._lock:
            self._decisions[about] = (event, box)
        try:
            _wait(event, timeout_s, cancel, lambda: not self.closed)
            return box[0] if box else None
        finally:
            with self._lock:
                self._decisions.pop(about, None)

    def decide(self, about: str, decision: dict[str, Any]) -> bool:
        """Deliver the person's decision on the held execute `about`; False if nothing awaits one."""
        with self._lock:
            waiting = self._decisions.get(about)
            if waiting is None or waiting[0].is_set():
                return False
            waiting[1].append(decision)
            waiting[0].set()
            return True

    def awaiting_decision(self) -> list[str]:
        with self._lock:
            return [about for about, (event, _) in self._decisions.items() if not event.is_set()]


def checked_reply(reply: dict[str, Any], request_id: str) -> dict[str, Any]:
    """A local host's reply checked against the contract as the host socket checks a runtime's: one that does
    not fit becomes an `error` reply naming what is wrong, so every link hands on only contract messages."""
    try:
        return validate_host_message(reply)
    except ContractError as exc:
        return {"type": "error", "request_id": request_id, "message": f"the host's reply was refused: {exc}"}


def _wait(done: threading.Event, timeout_s: float, cancel: threading.Event,
          alive: Callable[[], bool]) -> str | None:
    """None once `done` is set; else why not: TIMEOUT, CANCELLED or GONE."""
    deadline = time.monotonic() + timeout_s
    while not done.is_set():
        if cancel.is_set():
            return CANCELLED
        if not alive():
            return GONE
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return TIMEOUT
        done.wait(min(remaining, 0.05))
    return None


def session_link(hosts: HostDirectory, channel: ResultChannel, session: dict[str, Any]) -> WebSocketHostLink | None:
    """The link to a session's host (a store row), or None when the session has no host."""
    if not session.get("host_id"):
        return None
    return WebSocketHostLink(hosts, channel, session["host_id"], session["user_name"], session["id"])
