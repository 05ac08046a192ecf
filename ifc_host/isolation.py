"""How the keeper gives each script its own process: `fork` or `spawn`.

- fork: the keeper forks a child ahead of each script; the child has a copy-on-write copy of the committed
  model and confines itself, then waits for its script. Only where fork is available and safe (Linux, BSD).
  Reads run instead in a fresh child of the keeper's read server (read_server.py), where it can be made.
- spawn: no fork anywhere (Windows has none; on macOS forking a process that has loaded system frameworks
  is unsafe). A warm spare process, started with multiprocessing's 'spawn' method, has already imported
  IfcOpenShell, loaded the committed file and confined itself; it runs exactly one script and is replaced in
  the background (from the new file after a commit), with a second one kept ready behind it. Same
  guarantees: the script's process is thrown away. Each spare parses the file itself, and that cannot be
  avoided: without fork, the only way to give a process its own copy of an IfcOpenShell model (whose
  entities live in the native memory of the process that read them) is to read it again, and a process
  that ran one script is never given another (the script may have changed anything in it, the model, the
  modules, its threads). Reads that follow each other faster than one parse take turns with the two
  spares kept ready, a read-only one never waiting for more than one parse.

Both hand the keeper a ScriptProcess: send commands, read messages and the serialised model, kill, reap.
The keeper's child is the script's supervisor; the script runs in a process of its own below it, whose
whole tree ends with it (process_tree.py). Killing means SIGKILL to that script process through a pidfd,
then a bounded wait for the supervisor: no process group is trusted and no wait blocks without a bound.
"""
from __future__ import annotations

import abc
import multiprocessing
import os
import shutil
import signal
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ifc_host import limits as script_limits
from ifc_host import process_count, sandbox
from ifc_host.pipes import MessageReader, send_message
from ifc_host.process_tree import ScriptHandle, reap_bounded
from ifc_host.read_server import LANDLOCK_ABI_NEEDED, JobTooBig, ReadServer, ServedRun
from ifc_host.refs import LoadedRef, ReferenceCache, ReferenceProblem, RefSpec, specs_of

if TYPE_CHECKING:
    import ifcopenshell

SPARE_START_TIMEOUT_S = 300.0
SUPERVISOR_GRACE_S = 10.0  # for the supervisor to reap what the script left and exit, once the script is dead
_OUTPUT_FILES = ("stdout", "epilogue", "crash")


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

    def ended(self) -> bool:
        """Its process has exited: closing it now does not wait for the kernel to tear it down."""

    def close(self) -> None:
        """Kill if still running, and remove its output files and scratch directory."""


def _remove_files(files: dict[str, Path], scratch: Path) -> None:
    for path in files.values():
        path.unlink(missing_ok=True)
    shutil.rmtree(scratch, ignore_errors=True)


class ForkedRun:
    def __init__(self, pid: int, reader: MessageReader, to_child: int, files: dict[str, Path], scratch: Path,
                 limits: script_limits.ScriptLimits, model_file: int | None = None) -> None:
        self.pid, self.reader, self.to_child, self.files, self.scratch = pid, reader, to_child, files, scratch
        self.model_file = model_file  # where the script's process writes the model it commits (see read_model)
        self.request_id, self.mode, self.started = "", "", time.monotonic()
        self.sandbox: dict[str, str] = {}
        self.exit_status: int | None = None
        self.limits, self.timeout_s = limits, None
        self.script = ScriptHandle()

    def adopt(self, ready: dict[str, Any]) -> None:
        """The script process said it is ready (with its pid): hold it by a pidfd while its parent runs."""
        self.script.adopt(ready.get("pid"), self._supervisor_running())

    def _supervisor_running(self) -> bool:
        if self.exit_status is not None:
            return False
        try:
            done, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return False
        if done:
            self.exit_status = status
        return not done

    def send(self, message: dict[str, Any]) -> None:
        send_message(self.to_child, message)

    def read(self, deadline: float | None) -> dict[str, Any] | None:
        return self.reader.read(deadline)

    def read_frame(self, deadline: float | None) -> bytes | None:
        return self.reader.read_frame(deadline)

    def read_model(self, size: int) -> bytes | None:
        """The model the script's process wrote to its model file (read_model_file), or None."""
        return None if self.model_file is None else read_model_file(self.model_file, size)

    def kill(self) -> None:
        self.stop()
        self.reap()

    def stop(self) -> None:
        if self.exit_status is None and not self.script.kill():
            try:  # not ready yet: the supervisor; its script process follows it (parent-death signal)
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def ended(self) -> bool:
        return not self._supervisor_running()

    def reap(self) -> int:
        if self.exit_status is None:
            status = reap_bounded(self.pid, SUPERVISOR_GRACE_S)
            self.exit_status = status if status is not None else signal.SIGKILL
        self.script.close()
        return self.exit_status

    def how_it_ended(self) -> str:
        self.stop()  # it closed its pipe: if it still runs, it ends now
        status = self.reap()
        if os.WIFSIGNALED(status):
            return script_limits.describe_exit(os.WTERMSIG(status), None, self.limits, self.timeout_s)
        return script_limits.describe_exit(None, os.WEXITSTATUS(status))

    def close(self) -> None:
        self.kill()
        _remove_files(self.files, self.scratch)
        for fd in (self.reader.fd, self.to_child, self.model_file):
            if fd is None:
                continue
            try:
                os.close(fd)
            except OSError:
                pass
        self.model_file = None


class _WarmSpares(abc.ABC):
    """Spare script processes holding the committed model, confined and waiting for their job; each is used
    once. `ahead` of them are kept ready: a spawned spare takes seconds to start (a fresh interpreter imports
    IfcOpenShell and loads the model), so two are kept and a replacement starts as soon as one is taken; the
    next call after a cancelled or failed script, which changed nothing, then finds one ready. A commit makes
    them all useless. A forked child is forked in milliseconds but takes longer to confine itself (tens of
    milliseconds, more on a busy machine): two are kept, so a call that follows the last one at once finds
    one confined and waiting. The one a read-only script takes is replaced after the reply, or while the
    script runs if it is still running a moment after it started (`replace_taken`: the keeper's fork of a
    big interpreter takes milliseconds, longer than a short read, and the keeper reads no result meanwhile);
    after an automation, which may change the model, only after the reply."""

    name = ""
    ahead = 1
    replace_when_taken = False  # start the replacement when a spare is taken, not after the reply

    def __init__(self) -> None:
        self.spares: list[tuple[ForkedRun | SpawnedRun, Path]] = []  # oldest (the next to be used) first
        self.replenishing = True  # False once a successor keeper is coming (see Keeper.after_reply)
        self.refs: list[LoadedRef] = []  # the reference models the spare holds (fork) or opens (spawn)
        self.ref_specs: list[RefSpec] = []
        self.ref_cache = ReferenceCache()
        self.limits = script_limits.from_environment()
        self.process_group = process_count.join_keeper_group(self.limits.processes)  # once: see process_count

    @property
    def spare(self) -> tuple[ForkedRun | SpawnedRun, Path] | None:
        """The spare the next script gets, with the file its model was read from."""
        return self.spares[0] if self.spares else None

    @abc.abstractmethod
    def _new_spare(self, model: ifcopenshell.file | None, committed_path: Path) -> ForkedRun | SpawnedRun:
        """Start a spare process holding the committed model (it reports 'ready' once confined)."""

    def _fill(self, model: ifcopenshell.file | None, committed_path: Path, count: int) -> None:
        """Drop spares of another file; start new ones until `count` hold this one."""
        for run, path in [spare for spare in self.spares if spare[1] != committed_path]:
            run.close()
            self.spares.remove((run, path))
        while len(self.spares) < count:
            self.spares.append((self._new_spare(model, committed_path), committed_path))

    def discard_spare(self) -> None:
        while self.spares:
            self.spares.pop()[0].close()

    def _ready_spare(self, model: ifcopenshell.file | None, committed_path: Path) -> ForkedRun | SpawnedRun:
        """The next spare, once it holds the model and has confined itself (started again if it died)."""
        last_error = ""
        for _attempt in range(2):
            self._fill(model, committed_path, 1)
            run = self.spares[0][0]
            if not run.sandbox:
                try:
                    ready = run.read(time.monotonic() + SPARE_START_TIMEOUT_S)
                except TimeoutError:
                    ready = {"error": f"it was not ready within {SPARE_START_TIMEOUT_S:g} s"}
                if not ready or ready.get("kind") != "ready":
                    last_error = (ready or {}).get("error") or run.how_it_ended()
                    self.spares.pop(0)[0].close()
                    continue
                run.sandbox = ready["sandbox"]
                run.adopt(ready)
            return run
        raise RuntimeError(f"the script process failed to start: {last_error}")

    def use_refs(self, raw: Any) -> None:
        """The reference models the next script sees (an execute's `refs`); a spare holding others is replaced.
        ReferenceProblem when one cannot be opened."""
        specs = specs_of(raw)
        refs = self.ref_cache.load(specs) if self.name == "fork" else []
        missing = [s for s in specs if self.name != "fork" and not Path(s.path).is_file()]
        if missing:
            raise ReferenceProblem(f"reference {missing[0].name}: no model file at {missing[0].path} on this host")
        if specs != self.ref_specs or [r.digest for r in refs] != [r.digest for r in self.refs]:
            self.discard_spare()
        self.ref_specs, self.refs = specs, refs

    def start(self, model: ifcopenshell.file, committed_path: Path, job: dict[str, Any],
              ) -> ForkedRun | SpawnedRun | ServedRun:
        self.use_refs(job.get("refs"))
        run = self._ready_spare(model, committed_path)
        self.spares.pop(0)
        run.request_id, run.mode, run.started = job["request_id"], job["mode"], time.monotonic()
        run.timeout_s = float(job["timeout_s"])
        run.send(job)
        if self.replenishing and self.replace_when_taken:
            self._fill(model, committed_path, self.ahead)
        return run

    def replace_taken(self, model: ifcopenshell.file, committed_path: Path) -> None:
        """A read-only script is still running: start the replacement of the spare it took now, while the keeper
        only waits for it (a read cannot change the committed model, so the replacement is certain to be used)."""
        if self.replenishing:
            self._fill(model, committed_path, self.ahead)

    def probe(self, model: ifcopenshell.file, committed_path: Path) -> dict[str, str]:
        """What the sandbox applies here, as the first spare reports it."""
        return self._ready_spare(model, committed_path).sandbox

    def wait_ready(self, model: ifcopenshell.file, committed_path: Path) -> None:
        """Block until the next script would start at once (benchmarks, tests): every spare kept ahead ready."""
        self._ready_spare(model, committed_path)
        for run, _path in self.spares[1:]:
            if not run.sandbox:
                try:
                    ready = run.read(time.monotonic() + SPARE_START_TIMEOUT_S)
                except TimeoutError:
                    ready = None
                if ready and ready.get("kind") == "ready":
                    run.sandbox = ready["sandbox"]
                    run.adopt(ready)
                else:
                    self.spares.remove((run, _path))
                    run.close()

    def after_run(self, committed_path: Path, model_changed: bool) -> None:
        """After a run, a commit or a reload: spares holding the old model are useless."""
        if model_changed:
            self.discard_spare()

    def replenish(self, model: ifcopenshell.file, committed_path: Path) -> None:
        """Start the spares kept ahead (called once the reply is sent, so it costs the caller nothing)."""
        if self.replenishing:
            self._fill(model, committed_path, self.ahead)

    def close(self) -> None:
        self.discard_spare()
        if self.process_group is not None:
            self.process_group.remove()


class ForkStrategy(_WarmSpares):
    """A child forked from the keeper ahead of each automation (copy-on-write copy of the committed model);
    reads run in a fresh child of the read server (read_server.py) once it is ready, else in a spare too."""

    name = "fork"
    ahead = 2

    def __init__(self, workdir: Path, private_fds: tuple[int, ...]) -> None:
        super().__init__()
        self.workdir = workdir
        self.private_fds = private_fds  # the keeper's own channel to the runtime: never left open in a child
        self.server: ReadServer | None = None
        # False where Landlock cannot scope signals, or once a server found its sandbox too weak to stand on
        self.serve_reads = sandbox.landlock_abi() >= LANDLOCK_ABI_NEEDED
        self._spent_servers: list[ReadServer] = []  # stopped, reaped once the kernel has torn them down
        sandbox.prepare()

    def start(self, model: ifcopenshell.file, committed_path: Path, job: dict[str, Any],
              ) -> ForkedRun | SpawnedRun | ServedRun:
        self.use_refs(job.get("refs"))
        server = self.server
        if job["mode"] == "collect" and server is not None and server.path == committed_path and server.ready():
            try:
                run = server.run(job, _output_files(self.workdir), self.limits)
            except (JobTooBig, OSError):
                pass
            else:
                return run
        return super().start(model, committed_path, job)

    def replenish(self, model: ifcopenshell.file, committed_path: Path) -> None:
        super().replenish(model, committed_path)
        server = self.server
        if server is not None and (server.stopped or server.path != committed_path):
            self.serve_reads = self.serve_reads and not server.refused
            self._drop_server()
        if self.server is None and self.replenishing and self.serve_reads:
            self.server = ReadServer(model, committed_path, _scratch(self.workdir), self.private_fds, self.refs)
        for spent in [s for s in self._spent_servers if s.ended()]:
            self._spent_servers.remove(spent)
            spent.close()

    def _drop_server(self) -> None:
        if self.server is not None:
            self.server.stop()
            self._spent_servers.append(self.server)
            self.server = None

    def discard_spare(self) -> None:
        super().discard_spare()
        self._drop_server()

    def wait_ready(self, model: ifcopenshell.file, committed_path: Path) -> None:
        self.replenish(model, committed_path)
        super().wait_ready(model, committed_path)
        if self.server is not None:
            self.server.ready(SPARE_START_TIMEOUT_S)

    def close(self) -> None:
        self._drop_server()
        for spent in self._spent_servers:
            spent.close()
        self._spent_servers.clear()
        super().close()

    def _new_spare(self, model: ifcopenshell.file | None, committed_path: Path) -> ForkedRun:
        assert model is not None
        scratch = _scratch(self.workdir)
        files = _output_files(self.workdir)
        file_fds = {name: os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600) for name, path in files.items()}
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        model_file = _model_file()
        pid = os.fork()
        if pid == 0:
            from ifc_host.child import child_main

            for fd in (to_child_w, from_child_r, *self.private_fds):
                os.close(fd)
            child_fds = {**file_fds, "to_keeper": from_child_w, "from_keeper": to_child_r}
            if model_file is not None:
                child_fds["model_out"] = model_file
            child_main(model, scratch, child_fds, self.refs)
        try:
            os.setpgid(pid, pid)  # also done by the child; whichever runs first wins the race harmlessly
        except (PermissionError, ProcessLookupError):
            pass
        os.close(to_child_r)
        os.close(from_child_w)
        for fd in file_fds.values():
            os.close(fd)
        return ForkedRun(pid, MessageReader(from_child_r), to_child_w, files, scratch, self.limits, model_file)


def read_model_file(fd: int, size: int) -> bytes | None:
    """The `size` bytes a script's process wrote to its model file `fd` (None if it holds another number of
    bytes), read in one copy; the file is emptied. A model that way costs the two processes one copy each,
    instead of taking turns over a pipe a megabyte at a time (each turn waits for both to be scheduled). What
    it holds is what the process sent, checked as any model sent is; nothing is read past its real size."""
    if os.fstat(fd).st_size != size:
        return None
    chunks, done = [], 0
    while done < size:
        chunk = os.pread(fd, size - done, done)
        if not chunk:
            return None
        chunks.append(chunk)
        done += len(chunk)
    os.ftruncate(fd, 0)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _model_file() -> int | None:
    """An anonymous in-memory file for the model a forked script's process commits (ForkedRun.read_model);
    None where there is none (the model then comes over the pipe)."""
    if not hasattr(os, "memfd_create"):
        return None
    try:
        return os.memfd_create("nexus-commit-model", os.MFD_CLOEXEC)
    except OSError:
        return None


class SpawnedRun:
    def __init__(self, process: multiprocessing.process.BaseProcess, conn: Connection, files: dict[str, Path],
                 scratch: Path, sandbox: dict[str, str], limits: script_limits.ScriptLimits) -> None:
        self.process, self.conn, self.files, self.scratch, self.sandbox = process, conn, files, scratch, sandbox
        self.request_id, self.mode, self.started = "", "", time.monotonic()
        self.limits, self.timeout_s = limits, None
        self.script = ScriptHandle()

    def adopt(self, ready: dict[str, Any]) -> None:
        self.script.adopt(ready.get("pid"), self.process.exitcode is None)

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
        self.stop()
        self._join()

    def stop(self) -> None:
        if self.process.exitcode is None and self.process.pid is not None and not self.script.kill():
            self.process.kill()  # not ready yet: the supervisor (the script process follows it)

    def ended(self) -> bool:
        return self.process.exitcode is not None

    def _join(self) -> None:
        """Bounded: the supervisor ends once the script's tree is gone; killed if it does not."""
        self.process.join(SUPERVISOR_GRACE_S)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join(30.0)
        self.script.close()

    def how_it_ended(self) -> str:
        self.kill()
        code = self.process.exitcode
        if code is not None and code < 0:
            return script_limits.describe_exit(-code, None, self.limits, self.timeout_s)
        return script_limits.describe_exit(None, code)

    def close(self) -> None:
        self.kill()
        _remove_files(self.files, self.scratch)
        self.conn.close()
        if self.process.exitcode is not None:
            self.process.close()


class SpawnStrategy(_WarmSpares):
    """A fresh interpreter (multiprocessing 'spawn') that loaded the committed file itself, per script."""

    name = "spawn"
    ahead = 2
    replace_when_taken = True  # loading takes seconds: overlap it with the script

    def __init__(self, workdir: Path, committed_path: Path) -> None:
        super().__init__()
        self.workdir = workdir
        self.context = multiprocessing.get_context("spawn")
        self._fill(None, committed_path, self.ahead)

    def _new_spare(self, model: ifcopenshell.file | None, committed_path: Path) -> SpawnedRun:
        from ifc_host.spare import spare_main

        ours, theirs = self.context.Pipe(duplex=True)
        files = _output_files(self.workdir)
        scratch = _scratch(self.workdir)
        process = self.context.Process(
            target=spare_main, name="nexus-ifc-spare", daemon=True,
            args=(theirs, str(committed_path), str(scratch), {k: str(v) for k, v in files.items()},
                  [(r.name, r.path) for r in self.ref_specs]))
        process.start()
        theirs.close()
        return SpawnedRun(process, ours, files, scratch, {}, self.limits)


def _output_files(workdir: Path) -> dict[str, Path]:
    stamp = time.monotonic_ns()
    return {name: workdir / f"{name}-{stamp}.txt" for name in _OUTPUT_FILES}


def _scratch(workdir: Path) -> Path:
    path = workdir / f"scratch-{time.monotonic_ns()}"
    path.mkdir(mode=0o700)
    return path
