"""How the keeper gives each script its own process: `fork` or `spawn`.

- fork: the keeper forks a child per script; the child has a copy-on-write copy of the committed model, so
  starting costs a fork whatever the model's size. Only where fork is available and safe (Linux, BSD).
- spawn: no fork anywhere (Windows has none; on macOS forking a process that has loaded system frameworks
  is unsafe). A warm spare process, started with multiprocessing's 'spawn' method, has already imported
  IfcOpenShell, loaded the committed file and confined itself; it runs exactly one script and is replaced in
  the background (from the new file after a commit). Same guarantees: the script's process is thrown away.

Both hand the keeper a ScriptProcess: send commands, read messages and the serialised model, kill, reap.
"""
from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ifc_host import sandbox
from ifc_host.pipes import MessageReader, send_message

if TYPE_CHECKING:
    import ifcopenshell

ISOLATIONS = ("fork", "spawn")
SPARE_START_TIMEOUT_S = 300.0
_OUTPUT_FILES = ("stdout", "epilogue", "crash")


def default_isolation() -> str:
    """fork where it is available and safe; spawn on Windows and macOS (and wherever fork is missing)."""
    chosen = os.environ.get("NEXUS_IFC_ISOLATION", "").strip().lower()
    if chosen in ISOLATIONS:
        return chosen
    return "fork" if fork_is_safe() else "spawn"


def fork_is_safe() -> bool:
    return hasattr(os, "fork") and sys.platform not in ("darwin", "win32", "cygwin")


class ScriptProcess(Protocol):
    """One script's process, seen from the keeper."""

    request_id: str
    mode: str
    started: float
    files: dict[str, Path]

    def send(self, message: dict[str, Any]) -> None: ...

    def read(self, deadline: float | None) -> dict[str, Any] | None:
        """The next message, None when the process ended; TimeoutError when the deadline passes."""

    def read_frame(self, deadline: float | None) -> bytes | None: ...

    def kill(self) -> None: ...

    def stop(self) -> None:
        """SIGKILL without waiting: the kernel tears the process down while the keeper answers (close reaps)."""

    def how_it_ended(self) -> str:
        """After the process ended unasked: 'crashed ... (SIGSEGV)' or 'ended ... (exit status 3)'."""

    def close(self) -> None:
        """Kill if still running, and remove its output files and scratch directory."""


def _remove_files(files: dict[str, Path], scratch: Path) -> None:
    for path in files.values():
        path.unlink(missing_ok=True)
    shutil.rmtree(scratch, ignore_errors=True)


def _describe_exit(signum: int | None, status: int | None) -> str:
    if signum is not None:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return f"the script crashed the process running it ({name})"
    return f"the script ended the process running it (exit status {status})"


class ForkedRun:
    def __init__(self, pid: int, request_id: str, mode: str, started: float, reader: MessageReader, to_child: int,
                 files: dict[str, Path], scratch: Path) -> None:
        self.pid, self.request_id, self.mode, self.started = pid, request_id, mode, started
        self.reader, self.to_child, self.files, self.scratch = reader, to_child, files, scratch
        self.exit_status: int | None = None

    def send(self, message: dict[str, Any]) -> None:
        send_message(self.to_child, message)

    def read(self, deadline: float | None) -> dict[str, Any] | None:
        return self.reader.read(deadline)

    def read_frame(self, deadline: float | None) -> bytes | None:
        return self.reader.read_frame(deadline)

    def kill(self) -> None:
        if self.exit_status is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            except PermissionError:
                os.kill(self.pid, signal.SIGKILL)
        self.reap()

    def stop(self) -> None:
        if self.exit_status is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def reap(self) -> int:
        if self.exit_status is None:
            _, status = os.waitpid(self.pid, 0)
            self.exit_status = status
            try:
                os.killpg(self.pid, signal.SIGKILL)  # anything the script started in its process group
            except (ProcessLookupError, PermissionError):
                pass
        return self.exit_status

    def how_it_ended(self) -> str:
        status = self.reap()
        if os.WIFSIGNALED(status):
            return _describe_exit(os.WTERMSIG(status), None)
        return _describe_exit(None, os.WEXITSTATUS(status))

    def close(self) -> None:
        self.kill()
        _remove_files(self.files, self.scratch)
        for fd in (self.reader.fd, self.to_child):
            try:
                os.close(fd)
            except OSError:
                pass


class ForkStrategy:
    """A child forked from the keeper per script."""

    name = "fork"

    def __init__(self, workdir: Path, private_fds: tuple[int, ...]) -> None:
        self.workdir = workdir
        self.private_fds = private_fds  # the keeper's own channel to the runtime: never left open in a child
        sandbox.prepare()

    def start(self, model: ifcopenshell.file, committed_path: Path, job: dict[str, Any]) -> ForkedRun:
        scratch = _scratch(self.workdir)
        files = _output_files(self.workdir)
        file_fds = {name: os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600) for name, path in files.items()}
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            from ifc_host.child import child_main

            for fd in (to_child_w, from_child_r, *self.private_fds):
                os.close(fd)
            child_main(model, {**job, "scratch": str(scratch)},
                       {**file_fds, "to_keeper": from_child_w, "from_keeper": to_child_r})
        try:
            os.setpgid(pid, pid)  # also done by the child; whichever runs first wins the race harmlessly
        except (PermissionError, ProcessLookupError):
            pass
        os.close(to_child_r)
        os.close(from_child_w)
        for fd in file_fds.values():
            os.close(fd)
        return ForkedRun(pid, job.get("request_id", ""), job.get("mode", ""), started, MessageReader(from_child_r),
                         to_child_w, files, scratch)

    def probe(self, model: ifcopenshell.file, committed_path: Path) -> dict[str, str]:
        """What the sandbox applies here, from a throwaway child."""
        run = self.start(model, committed_path, {"op": "probe"})
        try:
            message = run.read(time.monotonic() + 60)
        except TimeoutError:
            message = None
        finally:
            run.close()
        return (message or {}).get("sandbox") or {"error": "the sandbox probe did not answer"}

    def after_run(self, committed_path: Path, model_changed: bool) -> None:
        """Nothing to prepare: the next fork copies the keeper's model as it is then."""

    def wait_ready(self, committed_path: Path) -> None:
        """Always ready: a fork needs no preparation."""

    def close(self) -> None:
        """No processes outlive a run."""


class SpawnedRun:
    def __init__(self, process: multiprocessing.process.BaseProcess, conn: Connection, files: dict[str, Path],
                 scratch: Path, sandbox: dict[str, str]) -> None:
        self.process, self.conn, self.files, self.scratch, self.sandbox = process, conn, files, scratch, sandbox
        self.request_id, self.mode, self.started = "", "", time.monotonic()

    def send(self, message: dict[str, Any]) -> None:
        self.conn.send(message)

    def _wait(self, deadline: float | None) -> bool:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        return self.conn.poll(timeout)

    def read(self, deadline: float | None) -> dict[str, Any] | None:
        if not self._wait(deadline):
            raise TimeoutError
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            return None

    def read_frame(self, deadline: float | None) -> bytes | None:
        if not self._wait(deadline):
            raise TimeoutError
        try:
            return self.conn.recv_bytes()
        except (EOFError, OSError):
            return None

    def kill(self) -> None:
        if self.process.exitcode is None and self.process.pid is not None:
            if hasattr(os, "killpg"):
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)  # with anything the script started
                except (ProcessLookupError, PermissionError):
                    self.process.kill()
            else:
                self.process.kill()
        self.process.join()

    def stop(self) -> None:
        if self.process.exitcode is None and self.process.pid is not None:
            try:
                if hasattr(os, "killpg"):
                    os.killpg(self.process.pid, signal.SIGKILL)
                else:
                    self.process.kill()
            except (ProcessLookupError, PermissionError):
                self.process.kill()

    def how_it_ended(self) -> str:
        self.process.join()
        code = self.process.exitcode
        if code is not None and code < 0:
            return _describe_exit(-code, None)
        return _describe_exit(None, code)

    def close(self) -> None:
        self.kill()
        _remove_files(self.files, self.scratch)
        self.conn.close()
        self.process.close()


class SpawnStrategy:
    """One warm spare process at a time, loaded from the committed file, used once, then replaced."""

    name = "spawn"

    def __init__(self, workdir: Path, committed_path: Path) -> None:
        self.workdir = workdir
        self.context = multiprocessing.get_context("spawn")
        self.spare: tuple[SpawnedRun, Path] | None = None
        self._prepare(committed_path)

    def _prepare(self, committed_path: Path) -> None:
        from ifc_host.spare import spare_main

        self.discard_spare()
        ours, theirs = self.context.Pipe(duplex=True)
        files = _output_files(self.workdir)
        scratch = _scratch(self.workdir)
        process = self.context.Process(
            target=spare_main, name="nexus-ifc-spare", daemon=True,
            args=(theirs, str(committed_path), str(scratch), {k: str(v) for k, v in files.items()}))
        process.start()
        theirs.close()
        self.spare = (SpawnedRun(process, ours, files, scratch, {}), committed_path)

    def discard_spare(self) -> None:
        if self.spare is not None:
            self.spare[0].close()
            self.spare = None

    def _ready_spare(self, committed_path: Path) -> SpawnedRun:
        """The spare, once it has loaded the model and confined itself (started again if it died)."""
        last_error = ""
        for _attempt in range(2):
            if self.spare is None or self.spare[1] != committed_path:
                self._prepare(committed_path)
            assert self.spare is not None
            run = self.spare[0]
            if not run.sandbox:
                try:
                    ready = run.read(time.monotonic() + SPARE_START_TIMEOUT_S)
                except TimeoutError:
                    ready = None
                if not ready or ready.get("kind") != "ready":
                    detail = (ready or {}).get("error") or run.how_it_ended()
                    self.discard_spare()
                    last_error = detail
                    continue
                run.sandbox = ready["sandbox"]
            return run
        raise RuntimeError(f"the spare script process failed to start: {last_error}")

    def start(self, model: ifcopenshell.file, committed_path: Path, job: dict[str, Any]) -> SpawnedRun:
        run = self._ready_spare(committed_path)
        self.spare = None
        run.request_id, run.mode, run.started = job["request_id"], job["mode"], time.monotonic()
        run.send({**job, "scratch": str(run.scratch)})
        if job["mode"] == "collect":
            self._prepare(committed_path)  # a collect cannot change the model: the next spare can load now
        return run

    def probe(self, model: ifcopenshell.file, committed_path: Path) -> dict[str, str]:
        return self._ready_spare(committed_path).sandbox

    def wait_ready(self, committed_path: Path) -> None:
        """Block until the spare for the committed model is loaded and confined (benchmarks, tests)."""
        self._ready_spare(committed_path)

    def after_run(self, committed_path: Path, model_changed: bool) -> None:
        """After a run, a commit or a reload: make sure a spare is loading the model as it now is."""
        if model_changed or self.spare is None or self.spare[1] != committed_path:
            self._prepare(committed_path)

    def close(self) -> None:
        self.discard_spare()


def _output_files(workdir: Path) -> dict[str, Path]:
    stamp = time.monotonic_ns()
    return {name: workdir / f"{name}-{stamp}.txt" for name in _OUTPUT_FILES}


def _scratch(workdir: Path) -> Path:
    path = workdir / f"scratch-{time.monotonic_ns()}"
    path.mkdir(mode=0o700)
    return path
