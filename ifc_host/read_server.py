"""The keeper's read server (fork isolation, Linux): read-only scripts run in a fresh child of one standing,
confined process instead of in a spare forked from the keeper, so no fork of the keeper (milliseconds for a
big interpreter) and no spare's confinement (three forks, four namespaces, Landlock, seccomp) sits on a
read's path, nor is paid per read.

Trust boundary. The server (read_child.py) is made exactly as a script's process is: the keeper forks it, it
splits into a supervisor outside its namespaces and a PID namespace's reaper, and confines itself
(sandbox.apply: scrubbed environment, user, network, PID, mount and IPC namespaces, a tmpfs scratch, rlimits,
Landlock, seccomp). It runs no script: everything a script could reach from it, it could reach from a spare.
Each read's child is forked from it and, before the script runs, holds nothing but what the keeper sent for
this read (its own pipe to the keeper and its own output files, passed over the server's socket, which it
closes), has an IPC namespace and a scratch folder of its own, and a Landlock domain nested in the server's:
it can write only its own scratch folder, and can neither trace nor signal (nor read the memory of) the
server, its reaper or anything outside its domain. The model it sees is its copy-on-write copy of the server's.
After it exits, the server kills every other process of its namespace and removes its scratch folder (a server
that cannot is replaced) before it forks the next child. So a read can leave nothing for the next one: no
process, no file, no IPC object, no byte in a channel, no change to the server's memory.

A read the keeper must stop (its deadline, a cancel) is stopped by killing the whole server (its namespace ends
with it); a new server is made after the reply. Only reads use the server: an automation's process sends its
model back and obeys commit or discard, and keeps using the spares. Where Landlock, seccomp or the PID
namespace are not in force (or Landlock is older than ABI 6, which scopes signals), reads use the spares
too: without them the nested domain proves nothing.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ifc_host import limits as script_limits
from ifc_host.pipes import MessageReader
from ifc_host.process_tree import ScriptHandle, reap_bounded
from ifc_host.read_child import MAX_JOB_BYTES, READ_FDS
from ifc_host.refs import LoadedRef

if TYPE_CHECKING:
    import ifcopenshell

SUPERVISOR_GRACE_S = 10.0
LANDLOCK_ABI_NEEDED = 6  # signal scoping: a read's kill(-1) reaches its own processes only, never its server
DONE_WAIT_S = 10.0  # for the server to say how a child that sent no result ended


class JobTooBig(ValueError):
    """The job does not fit one message of the server's socket: it runs in a spare instead."""


def confined(report: dict[str, str]) -> bool:
    """Whether the server's sandbox is one a nested domain can stand on: Landlock, seccomp, PID namespace."""
    return (report.get("filesystem", "").startswith("read-only") and report.get("sockets", "").startswith("none")
            and "own PID namespace" in report.get("processes", ""))


class ReadServer:
    """The keeper's end of one read server, holding the committed model as read from `path`."""

    def __init__(self, model: ifcopenshell.file, path: Path, scratch: Path, private_fds: tuple[int, ...],
                 refs: list[LoadedRef]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            from ifc_host.read_child import server_main

            ours.close()
            for fd in private_fds:
                os.close(fd)
            server_main(model, scratch, theirs.detach(), refs)
        theirs.close()
        self.pid, self.sock, self.path, self.scratch = pid, ours, path, scratch
        self.sandbox: dict[str, str] = {}
        self.exit_status: int | None = None
        self.handle = ScriptHandle()
        self.sent = self.done = 0  # jobs sent, and children the server said it finished
        self.last_done: dict[str, Any] = {}
        self.stopped = False  # killed, or found unusable: replaced (or, if refused, never made again)
        self.refused = False  # its sandbox is not one a nested domain can stand on (see `confined`)

    # --- the server ---------------------------------------------------------------------------------
    def ready(self, wait_s: float = 0.0) -> bool:
        """The server has confined itself and serves (False while it starts, or once it is gone)."""
        if self.stopped:
            return False
        if self.sandbox:
            return True
        message = self._receive(wait_s)
        if message is None or message.get("kind") != "ready":
            return False
        self.handle.adopt(message.get("pid"), self._running())
        self.sandbox = message.get("sandbox") or {}
        if not confined(self.sandbox):
            self.refused = True
            self.stop()
            return False
        return True

    def _receive(self, wait_s: float) -> dict[str, Any] | None:
        if self.stopped:
            return None
        try:
            readable, _, _ = select.select([self.sock], [], [], max(0.0, wait_s))
            if not readable:
                return None
            data = self.sock.recv(MAX_JOB_BYTES)
        except OSError:
            data = b""
        if not data:
            self.stop()
            return None
        return json.loads(data)

    def _take_done(self, wait_s: float) -> None:
        """Read what the server said of the children finished so far; a dirty one (cleanup failed) ends it."""
        deadline = time.monotonic() + wait_s
        while self.done < self.sent and not self.stopped:
            message = self._receive(max(0.0, deadline - time.monotonic()))
            if message is None:
                return
            if message.get("kind") == "done":
                self.done += 1
                self.last_done = message
                if not message.get("clean"):
                    self.stop()

    def run(self, job: dict[str, Any], files: dict[str, Path], limits: script_limits.ScriptLimits) -> ServedRun:
        """Hand the job to the child waiting in the server, with this read's own pipe and output files."""
        data = json.dumps(job).encode("utf-8")
        if len(data) > MAX_JOB_BYTES:
            raise JobTooBig(f"{len(data)} bytes")
        self._take_done(0.0)
        if not self.ready():
            raise OSError("the read server has ended")
        from_child, to_keeper = os.pipe()
        fds = {"to_keeper": to_keeper}
        try:
            for name in READ_FDS[1:]:
                fds[name] = os.open(files[name], os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            socket.send_fds(self.sock, [data], [fds[name] for name in READ_FDS])
        except OSError:
            os.close(from_child)
            self.stop()
            raise
        finally:
            for fd in fds.values():
                os.close(fd)
        self.sent += 1
        return ServedRun(self, MessageReader(from_child), files, job, limits)

    def _running(self) -> bool:
        if self.exit_status is not None:
            return False
        try:
            done, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            done, status = self.pid, 0
        if done:
            self.exit_status = status
        return not done

    def stop(self) -> None:
        """SIGKILL the server (its namespace, and so the read running in it, ends with it) without waiting."""
        self.stopped = True
        if self._running() and not self.handle.kill():
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def ended(self) -> bool:
        return not self._running()

    def close(self) -> None:
        self.stop()
        if self.exit_status is None:
            status = reap_bounded(self.pid, SUPERVISOR_GRACE_S)
            self.exit_status = status if status is not None else signal.SIGKILL
        self.handle.close()
        self.sock.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


class ServedRun:
    """One read in a child of the read server, seen from the keeper as any script's process (ScriptProcess)."""

    def __init__(self, server: ReadServer, reader: MessageReader, files: dict[str, Path], job: dict[str, Any],
                 limits: script_limits.ScriptLimits) -> None:
        self.server, self.reader, self.files, self.limits = server, reader, files, limits
        self.request_id, self.mode, self.started = job["request_id"], job["mode"], time.monotonic()
        self.timeout_s = float(job["timeout_s"])
        self.sandbox = server.sandbox
        self.answered = False

    def send(self, message: dict[str, Any]) -> None:
        raise RuntimeError("a read in the read server takes no command after its job")

    def read(self, deadline: float | None) -> dict[str, Any] | None:
        message = self.reader.read(deadline)
        self.answered = self.answered or (message or {}).get("kind") == "result"
        return message

    def read_frame(self, deadline: float | None) -> bytes | None:
        return self.reader.read_frame(deadline)

    def kill(self) -> None:
        self.stop()

    def stop(self) -> None:
        """A child that answered ends by itself; one that did not is stopped with its server."""
        if not self.answered:
            self.server.stop()

    def ended(self) -> bool:
        return True

    def how_it_ended(self) -> str:
        """The child's pipe closed without a result: how it ended, as its server saw it."""
        self.server._take_done(DONE_WAIT_S)
        if self.server.done < self.server.sent:
            self.server.stop()
            return "the script crashed the process running it (its read server ended)"
        code = int(self.server.last_done.get("exit", 70))
        if code >= 0:
            return script_limits.describe_exit(None, code)
        signum = -code
        cpu_limit = self.limits.cpu_limit_s(self.timeout_s)
        if signum == signal.SIGKILL and float(self.server.last_done.get("cpu_s", 0)) >= cpu_limit - 0.05:
            signum = signal.SIGXCPU  # the kernel's SIGKILL at the hard CPU limit: say which limit it was
        return script_limits.describe_exit(signum, None, self.limits, self.timeout_s)

    def close(self) -> None:
        try:
            os.close(self.reader.fd)
        except OSError:
            pass
        for path in self.files.values():
            path.unlink(missing_ok=True)
