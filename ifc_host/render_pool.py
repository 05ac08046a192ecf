"""Render servers kept by this process: each one a ``python -m ifc_host.render_child --serve`` that keeps the
models it opened, so the next view of the same model skips the open (render_models.py).

A server answers one request at a time. ``run`` takes an idle server that already holds the model (else any idle
one, else a new one), sends the request and waits for its answer within the time left. A server that crashed,
timed out (it is killed) or said it leaves is never reused; the next request starts another. At most
``KEEP_IDLE`` idle servers are kept (a server serves only requests for its own command and environment) (the least recently used one is closed), each leaves by itself after
``render_child.IDLE_EXIT_S`` without a request or when this process ends (EOF on its stdin). A forked child of
this process never uses its parent's servers: it starts its own.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import select
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

KEEP_IDLE = 2
WAIT_SHARE = 0.6  # of a request's time, spent at most waiting for the busy server that holds its model
_STDERR_KEPT = 4096


class ServerTimeout(Exception):
    """The server did not answer in time (it was killed)."""


@dataclass
class Outcome:
    """How one request went: answered, or the server died (``returncode``, negative for a signal)."""
    answered: bool
    returncode: int | None = None
    stderr_tail: str = ""
    reply: dict[str, object] = field(default_factory=dict)


class RenderServer:
    def __init__(self, command: Sequence[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=env)
        self.key = server_key(command, env)
        self.paths: set[str] = set()  # models this server opened (kept there unless evicted)
        self.served = 0
        self.opens = 0
        self._stderr = bytearray()
        self._stderr_lock = threading.Lock()
        self._pending = b""
        threading.Thread(target=self._drain_stderr, daemon=True, name="render-server-stderr").start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def run(self, request: dict[str, object], timeout_s: float) -> Outcome:
        with self._stderr_lock:
            self._stderr.clear()
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            return self._died()
        line = self._read_line(time.monotonic() + max(timeout_s, 0.0))
        if line is None:
            return self._died()
        self.served += 1
        return Outcome(True, reply=json.loads(line))

    def close(self) -> None:
        """Ask the server to leave (EOF), killing it if it does not within a moment."""
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        try:
            self.process.kill()
        except OSError:
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def stderr_tail(self) -> str:
        with self._stderr_lock:
            return bytes(self._stderr).decode("utf-8", "replace").strip()

    def _read_line(self, deadline: float) -> bytes | None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise ServerTimeout()
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return line

    def _died(self) -> Outcome:
        try:
            code = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.process.returncode
        time.sleep(0.05)  # the stderr reader catches the last words
        return Outcome(False, code, self.stderr_tail())

    def _drain_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        for chunk in iter(lambda: stream.read1(4096), b""):
            with self._stderr_lock:
                self._stderr.extend(chunk)
                del self._stderr[:-_STDERR_KEPT]


class RenderPool:
    def __init__(self, keep_idle: int = KEEP_IDLE) -> None:
        self._keep_idle = keep_idle
        self._idle: list[RenderServer] = []  # least recently used first
        self._busy: list[RenderServer] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._owner = os.getpid()
        atexit.register(self.close_all)

    def run(self, command: Sequence[str], env: dict[str, str], request: dict[str, object],
            timeout_s: float, wait_share: float = WAIT_SHARE) -> tuple[Outcome, RenderServer]:
        """Send the request to a server running ``command`` (raises ServerTimeout, OSError). When the only
        server holding the model is busy (opening it for an earlier view, or preparing it), wait for it up to
        ``wait_share`` of the time: a second open of the same file would cost as much and share the cores."""
        path = str(request.get("model_path"))
        started = time.monotonic()
        server = self._take(server_key(command, env), path, started + wait_share * timeout_s)
        if server is None:
            server = RenderServer(command, env)
            with self._lock:
                self._busy.append(server)
        server.paths.add(path)
        try:
            outcome = server.run(request, timeout_s - (time.monotonic() - started))
        except BaseException:
            self._drop(server)
            raise
        if outcome.answered:
            server.opens = int(outcome.reply.get("opens") or 0)
            if not outcome.reply.get("exit"):
                self._give_back(server)
                return outcome, server
        self._drop(server)
        return outcome, server

    def servers(self) -> list[RenderServer]:
        """The idle servers (for tests and benchmarks)."""
        with self._lock:
            return list(self._idle) if self._owner == os.getpid() else []

    def busy(self) -> int:
        """How many servers are answering a request now."""
        with self._lock:
            return len(self._busy) if self._owner == os.getpid() else 0

    def close_all(self) -> None:
        with self._lock:
            servers, self._idle = (self._idle if self._owner == os.getpid() else []), []
        for server in servers:
            server.close()

    def _take(self, key: str, path: str, wait_until: float) -> RenderServer | None:
        with self._lock:
            if self._owner != os.getpid():  # a forked child: its parent's servers are not its own
                self._idle, self._busy, self._owner = [], [], os.getpid()
            while True:
                self._idle = [s for s in self._idle if s.alive()]
                usable = [s for s in self._idle if s.key == key]
                chosen = next((s for s in reversed(usable) if path in s.paths), None)
                holding = [s for s in self._busy if s.key == key and path in s.paths and s.alive()]
                left = wait_until - time.monotonic()
                if chosen is None and holding and left > 0:
                    self._changed.wait(left)
                    continue
                chosen = chosen or (usable[-1] if usable else None)
                if chosen is not None:
                    self._idle.remove(chosen)
                    self._busy.append(chosen)
                return chosen

    def _give_back(self, server: RenderServer) -> None:
        with self._lock:
            if server in self._busy:
                self._busy.remove(server)
            if self._owner != os.getpid():
                surplus = [server]
            else:
                self._idle.append(server)
                surplus = self._idle[:-self._keep_idle] if len(self._idle) > self._keep_idle else []
                self._idle = self._idle[len(surplus):]
            self._changed.notify_all()
        for extra in surplus:
            extra.close()

    def _drop(self, server: RenderServer) -> None:
        server.kill()
        with self._lock:
            if server in self._busy:
                self._busy.remove(server)
            self._changed.notify_all()


def server_key(command: Sequence[str], env: dict[str, str]) -> str:
    """Servers are shared only by requests that would start the same command in the same environment."""
    digest = hashlib.blake2b(json.dumps([list(command), sorted(env.items())]).encode("utf-8"), digest_size=16)
    return digest.hexdigest()


pool = RenderPool()
