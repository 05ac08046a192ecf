"""Isolated script execution, seen from the runtime: a proxy to the model keeper process.

The keeper is started as a fresh interpreter (`python -m ifc_host.keeper`), never forked from this process,
which has threads (the websocket client). Its environment is scrubbed: only what Python needs to start
travels (no tokens, no API keys, no server settings), so neither it nor any script process it starts can
hand a secret to a script. If the keeper itself dies, the proxy starts a new one from the last committed
file, so nothing committed is lost and the host keeps serving.

After a commit on a big model, or once the keeper's memory has grown well past one model's (handover.py
says when), the keeper is replaced by a fresh one that opened the new file (`_hand_over`): a process that has
parsed one model, however many commits came before, so its memory and the cost of forking it do not grow with
the commits (IfcOpenShell keeps what a replaced model used). After a commit on a small model the keeper goes on
serving: a fresh interpreter would cost more than the memory it saves. The keeper applies the policy itself
(sent with every request) and says in its commit reply whether a successor follows, so a commit costs one
round trip either way. The successor starts in the
background while the old keeper goes on serving; it takes over between requests, once nothing is held, with
the old keeper's late decisions and early aborts, and only if the saved file is still the one the old keeper
wrote (otherwise the old keeper stays, and sees the change as before). A successor that fails to start costs
nothing: the old keeper holds the committed model too, and the file on disk is the truth.

An abort (the run was cancelled) reaches the keeper at once, even while it runs the script: `expect` marks
an execute as accepted before its thread starts, `abort_running` tells the keeper to kill it (its own result
then says it was cancelled), and `abort_held` discards a held automation.

The proxy keeps no copy of the keeper's state: the held automation and when the keeper will discard it, the
file holding the committed model and its signature come with every keeper reply (KeeperState), and are read
from the last one.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import subprocess
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ifc_host import limits as script_limits
from ifc_host.file_identity import BadModelError, file_signature
from ifc_host.handover import HandoverPolicy, resident_bytes
from ifc_host.keeper_process import (
    ABORTS_REMEMBERED,
    COMMIT_TIMEOUT_S,
    DEFAULT_HOLD_TIMEOUT_S,
    ISOLATIONS,
    SNAPSHOT_TIMEOUT_S,
    LaunchedKeeper,
    default_isolation,
    default_keeper_launch,
    exec_keeper,
    keeper_environment,
)
from shared_contract.host_messages import NO_CHANGES, Epilogue, ErrorInfo, ExecuteCommand, ModelRef
from shared_contract.validate import content_hash

log = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 300.0
CANCELLED_HELD = "cancelled while awaiting a keep/discard decision: discarded, the model is unchanged"

class SpawnedKeeper:
    """A keeper started with multiprocessing, behind the few subprocess.Popen calls the proxy makes."""

    def __init__(self, process: multiprocessing.process.BaseProcess) -> None:
        self.process = process

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.exitcode

    def poll(self) -> int | None:
        return self.process.exitcode

    def wait(self, timeout: float | None = None) -> int | None:
        self.process.join(timeout)
        if self.process.exitcode is None:
            raise subprocess.TimeoutExpired("model keeper", timeout or 0)
        return self.process.exitcode

    def kill(self) -> None:
        self.process.kill()


class KeeperUnavailable(RuntimeError):
    """The keeper process died or stopped answering (it has been restarted if possible)."""


LOCAL_CAPABILITY = "local"  # the capability version of an epilogue given here rather than by the cloud


def execute_command(request_id: str, mode: str, code: str, timeout_s: float, epilogue_code: str | None = None,
                    **options: Any) -> ExecuteCommand:
    """An execute for a script run without a cloud (tests, check scripts, benchmarks): `options` are the
    command's other fields (hold, validation, ids, rules, refs as {name, path} dicts or ModelRefs...)."""
    epilogue = Epilogue(epilogue_code, content_hash(epilogue_code), LOCAL_CAPABILITY) if epilogue_code else None
    refs = options.pop("refs", None)
    if refs:
        options["refs"] = tuple(r if isinstance(r, ModelRef) else ModelRef.from_dict(dict(r)) for r in refs)
    return ExecuteCommand(request_id, mode, code, timeout_s, epilogue, **options)  # type: ignore[arg-type]


@dataclass(frozen=True)
class KeeperState:
    """What the keeper said of the state it alone owns, in its last reply (keeper.Keeper.state)."""

    committed_path: Path  # the file holding the committed model
    signature: tuple[int, ...] | None  # that file (file_identity.file_signature) as the keeper last saw it
    held_request_id: str | None = None  # the automation held for a keep/discard decision
    held_until: float | None = None  # time.monotonic() here: when the keeper discards it undecided

    @classmethod
    def of_reply(cls, reply: dict[str, Any], received: float) -> KeeperState:
        state = reply["keeper"]
        held = state.get("held")
        signature = state.get("signature")
        return cls(Path(state["committed_path"]), tuple(signature) if signature else None,
                   held["request_id"] if held else None, received + float(held["expires_in_s"]) if held else None)

    def held_now(self) -> str | None:
        if self.held_request_id is None or self.held_until is None or time.monotonic() >= self.held_until:
            return None
        return self.held_request_id

    def without_hold(self) -> KeeperState:
        return replace(self, held_request_id=None, held_until=None)


class IsolatedExecutor:
    """Runs scripts against the model held by a keeper process; thread-safe, one request at a time."""

    def __init__(self, model_path: str | os.PathLike[str], save_path: str | os.PathLike[str] | None = None,
                 hold_timeout_s: float = DEFAULT_HOLD_TIMEOUT_S, isolation: str | None = None,
                 keeper_launch: str | None = None, launched: LaunchedKeeper | None = None,
                 handover: HandoverPolicy | None = None) -> None:
        """`launched`: a keeper already started on these paths (keeper_process.start_early), used as the
        first keeper instead of starting one; closed here if these arguments are refused."""
        try:
            self.isolation = isolation or default_isolation()
            script_limits.from_environment()  # a bad NEXUS_SCRIPT_* value is refused here, naming it (BadLimit)
            # When a commit hands over to a fresh keeper; a bad NEXUS_KEEPER_* value is refused here, naming it.
            self.handover_policy = handover or HandoverPolicy.from_environment()
            if self.isolation not in ISOLATIONS:
                raise ValueError(f"isolation must be one of {', '.join(ISOLATIONS)}, not {self.isolation!r}")
            self.model_path = Path(model_path).resolve()
            self.save_path = Path(save_path).resolve() if save_path else self.model_path
            if not self.save_path.parent.is_dir():
                raise BadModelError(f"{self.save_path}: the output folder {self.save_path.parent} does not exist")
        except BaseException:
            if launched is not None:
                _retire_keeper(*launched)
            raise
        self.hold_timeout_s = hold_timeout_s
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()  # requests and aborts share the keeper's connection
        self._flight_lock = threading.Lock()
        self._in_flight: str | None = None  # the execute accepted and not yet answered
        self._aborted: OrderedDict[str, None] = OrderedDict()
        self.keeper_launch = keeper_launch or default_keeper_launch()
        self._proc: subprocess.Popen[bytes] | SpawnedKeeper | None = None
        self._conn: Connection | None = None
        self.sandbox: dict[str, str] = {}
        self.ifcopenshell_version = ""  # the keeper's, for the hello: this process never imports IfcOpenShell
        self._generation = 0  # commits so far: a successor started for an older one is stale
        self._closed = False
        self._handover: threading.Thread | None = None
        self._successor: subprocess.Popen[bytes] | SpawnedKeeper | None = None  # starting, not yet in service
        self.handovers = 0
        self._rss_at_open: int | None = None  # the keeper's resident memory once its model was open
        self._resume_spares = False  # a successor a commit announced did not take over: the next request says so
        self._state = KeeperState(self.model_path, None)  # replaced by the keeper's own account as it starts
        self.document = self._start(self.model_path, launched)

    # --- public ---------------------------------------------------------------------------------------
    @property
    def keeper_state(self) -> KeeperState:
        """The keeper's account of what it holds, from its last reply."""
        return self._state

    @property
    def committed_path(self) -> Path:
        """The file that holds the committed model right now (what a plan of the committed model renders)."""
        return self._state.committed_path

    @property
    def held_request_id(self) -> str | None:
        """The automation the keeper holds for a decision (None once the keeper's hold has expired)."""
        return self._state.held_now()

    def expect(self, request_id: str) -> None:
        """An execute for `request_id` was accepted and will run: an abort from now on stops it."""
        with self._flight_lock:
            self._in_flight = request_id

    def forget(self, request_id: str) -> None:
        """The execute `request_id` was answered (or failed before it reached the keeper): nothing to abort."""
        with self._flight_lock:
            if self._in_flight == request_id:
                self._in_flight = None

    def abort_running(self, request_id: str) -> bool:
        """Stop the execute `request_id` if it is accepted and not yet answered (True): the keeper kills its
        script at once, or refuses it if it has not started, and its result says it was cancelled."""
        with self._flight_lock:
            if self._in_flight != request_id:
                return False
            self._aborted[request_id] = None
            while len(self._aborted) > ABORTS_REMEMBERED:
                self._aborted.popitem(last=False)
        with self._send_lock:
            if self._conn is not None:
                try:
                    self._conn.send({"op": "abort", "request_id": request_id})
                except OSError:
                    pass  # the keeper is gone: the execute in flight fails and the keeper restarts
        return True

    def abort_in_flight(self) -> str | None:
        """Stop whatever execute is in flight (the host is shutting down); its request id, or None."""
        with self._flight_lock:
            request_id = self._in_flight
        if request_id is not None and self.abort_running(request_id):
            return request_id
        return None

    def abort_held(self, request_id: str) -> dict[str, Any] | None:
        """Discard the held automation `request_id` because its run was cancelled; None if it is not held."""
        if self.held_request_id != request_id:
            return None
        discarded = self.decide(request_id, "discard")
        return None if discarded.get("unknown") else _as_cancelled(discarded, CANCELLED_HELD)

    def execute(self, job: ExecuteCommand) -> dict[str, Any]:
        with self._flight_lock:
            self._in_flight = job.request_id
        try:
            external = self._adopt_edits_made_on_disk()
            request = {"op": "execute", "command": job.to_dict(), "model_name": self.model_path.name}
            result = self._call(request, job.timeout_s + COMMIT_TIMEOUT_S + 30)
        except KeeperUnavailable as exc:
            with self._flight_lock:
                self._in_flight = None
            return _keeper_lost(str(exc))
        self._note_document(result)
        with self._flight_lock:  # only now: an abort in between finds it in flight, not yet held
            self._in_flight = None
            aborted = job.request_id in self._aborted
        if aborted and result.get("held"):
            # The script ended as the abort arrived: what it holds is discarded, as a cancel asks.
            result = self.abort_held(job.request_id) or _as_cancelled(result, CANCELLED_HELD)
        if external:
            result["external_changes"] = {"summary": external}
        return result

    def _adopt_edits_made_on_disk(self) -> str | None:
        """If another program rewrote the committed file since we last wrote or read it, work on its version."""
        path, seen = self._state.committed_path, self._state.signature
        signature = file_signature(path)
        if signature == seen or signature is None:
            return None
        reply = self._call({"op": "reload", "path": str(path)}, STARTUP_TIMEOUT_S)
        if reply.get("ok"):
            log.info("%s changed on disk; reloaded it", path)
            return (f"{path.name} was changed on disk by another program since the previous run; the host "
                    "reloaded it, so this script ran against that version (its changes are not itemised)")
        return (f"{path.name} was changed on disk by another program but could not be read "
                f"({reply.get('error')}); the host kept its own copy, which the next commit will save over it")

    def decide(self, request_id: str, decision: str) -> dict[str, Any]:
        try:
            result = self._call({"op": "decide", "request_id": request_id, "decision": decision},
                                COMMIT_TIMEOUT_S + 30)
        except KeeperUnavailable as exc:
            return _keeper_lost(str(exc))
        self._note_document(result)
        return result

    def snapshot_held(self, path: str | os.PathLike[str]) -> None:
        """Write the held (uncommitted) model to `path`, e.g. to render a preview of it."""
        reply = self._call({"op": "snapshot_held", "path": str(path)}, SNAPSHOT_TIMEOUT_S + 30)
        if not reply.get("ok"):
            raise RuntimeError(reply.get("message") or "the held model could not be written")

    def wait_warm(self) -> float:
        """Wait until the next script would start at once (the keeper replaced after a commit; spawn: its spare
        has loaded the model); seconds waited."""
        started = time.monotonic()
        self.wait_handover()
        self._call({"op": "warm"}, STARTUP_TIMEOUT_S)
        return time.monotonic() - started

    def wait_handover(self, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        """Wait until the keeper replacement after the last commit is done (or was given up)."""
        thread = self._handover
        if thread is not None:
            thread.join(timeout_s)

    def context(self) -> dict[str, Any]:
        """A snapshot of the committed model for the `context` request (storeys, counts, units)."""
        reply = self._call({"op": "context"}, 60)
        return reply["context"]

    @property
    def keeper_pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def keeper_memory_growth(self) -> int | None:
        """Bytes the keeper's resident memory grew since it opened its model (None where it cannot be read):
        what the handover policy's growth bound is compared with after a commit."""
        now = resident_bytes(self.keeper_pid)
        return None if now is None or self._rss_at_open is None else now - self._rss_at_open

    def close(self) -> None:
        self._closed = True
        successor = self._successor
        if successor is not None:
            successor.kill()
        with self._lock:
            self._stop_keeper()
        if self._handover is not None:
            self._handover.join(30)

    # --- internals -----------------------------------------------------------------------------------
    def _note_document(self, result: dict[str, Any]) -> None:
        document = result.pop("document", None)  # the keeper's description of a newly committed model
        if result.get("committed"):
            if document is not None:  # what the next hello (after a reconnect) says, e.g. its storeys
                self.document = document
            else:
                try:
                    self.document = self._call({"op": "document"}, 60)["document"]
                except KeeperUnavailable:
                    pass

    def _call(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        with self._lock:
            try:
                if self._conn is None:
                    raise OSError("the keeper is not running")
                request = {**request, "handover": asdict(self.handover_policy)}
                if self._resume_spares:
                    request["resume_spares"], self._resume_spares = True, False
                with self._send_lock:
                    self._conn.send(request)
                if not self._conn.poll(timeout_s):
                    raise TimeoutError(f"no answer within {timeout_s:g} s")
                reply = self._conn.recv()
                self._take_state(reply)
                written = self._state.signature
                if written and reply.get("committed") and not reply.get("unchanged"):
                    # Under the lock: no older successor takes over now.
                    self._generation += 1
                    if reply.get("successor"):
                        self._replace_keeper(written)
                return reply
            except (EOFError, OSError, TimeoutError) as exc:
                self._state = self._state.without_hold()  # whatever it held went with it
                code = self._proc.poll() if self._proc else None
                self._stop_keeper()
                why = f"exit status {code}" if code is not None else str(exc) or type(exc).__name__
                log.error("model keeper lost (%s); restarting from %s", why, self.committed_path)
                try:
                    self._start(self.committed_path)
                except (BadModelError, KeeperUnavailable) as restart_error:
                    raise KeeperUnavailable(f"the model keeper process was lost ({why}) and could not be "
                                            f"restarted: {restart_error}") from exc
                raise KeeperUnavailable(f"the model keeper process was lost ({why}); it was restarted from the "
                                        "last committed model") from exc

    def _take_state(self, reply: dict[str, Any]) -> None:
        self._state = KeeperState.of_reply(reply, time.monotonic())
        del reply["keeper"]

    def _start(self, path: Path, launched: LaunchedKeeper | None = None) -> dict[str, Any]:
        proc, conn = launched or self._launch(path)
        reply = self._hello(proc, conn, path)
        self._proc, self._conn = proc, conn
        self._rss_at_open = reply.get("rss_at_open") or resident_bytes(proc.pid)
        self.ifcopenshell_version = reply["ifcopenshell_version"]
        self._take_state(reply)
        self._note_sandbox(reply)
        return reply["document"]

    def _launch(self, path: Path, expect_signature: tuple[int, ...] | None = None,
                ) -> tuple[subprocess.Popen[bytes] | SpawnedKeeper, Connection]:
        if self.keeper_launch == "exec":
            return exec_keeper(path, self.save_path, self.hold_timeout_s, self.isolation, expect_signature)
        return self._spawn_keeper(path, keeper_environment(), expect_signature)

    def _hello(self, proc: subprocess.Popen[bytes] | SpawnedKeeper, conn: Connection, path: Path) -> dict[str, Any]:
        """The keeper's first message (its model opened, its first script process ready), or why it failed."""
        try:
            if not conn.poll(STARTUP_TIMEOUT_S):
                raise KeeperUnavailable(f"the model keeper did not start within {STARTUP_TIMEOUT_S:g} s")
            reply = conn.recv()
        except (EOFError, OSError, KeeperUnavailable) as exc:
            proc.kill()
            proc.wait()
            conn.close()
            raise KeeperUnavailable(f"the model keeper failed to start (exit status {proc.returncode})") from exc
        if not reply.get("ok"):
            proc.wait(timeout=30)
            conn.close()
            if reply.get("stale"):
                raise KeeperUnavailable(reply.get("error") or f"{path} changed on disk")
            raise BadModelError(reply.get("error") or f"{path}: could not be opened")
        return reply

    def _note_sandbox(self, reply: dict[str, Any]) -> None:
        if reply.get("sandbox") != self.sandbox:
            self.sandbox = reply.get("sandbox") or {}
            log.info("scripts run in %s processes; what they can reach: %s", self.isolation,
                     "; ".join(f"{k}: {v}" for k, v in self.sandbox.items()))

    # --- replacing the keeper after a commit -------------------------------------------------------
    def _replace_keeper(self, written: tuple[int, ...]) -> None:
        """Start a successor keeper on the file just committed (see the module's doc); returns at once."""
        thread = threading.Thread(target=self._hand_over, args=(self._generation, written),
                                  name="keeper-handover", daemon=True)
        self._handover = thread
        thread.start()

    def _hand_over(self, generation: int, written: tuple[int, ...]) -> None:
        try:
            proc, conn = self._launch(self.save_path, written)
        except OSError as exc:
            log.warning("the model keeper was not replaced after the commit: %s", exc)
            self._no_successor(generation)
            return
        self._successor = proc
        try:
            try:
                reply = self._hello(proc, conn, self.save_path)
            except (BadModelError, KeeperUnavailable) as exc:
                log.info("the model keeper was not replaced after the commit (%s); the current one goes on", exc)
                self._no_successor(generation)
                return
            while not (self._closed or generation != self._generation):
                failed: BaseException | None = None
                with self._lock:
                    if self._closed or generation != self._generation:
                        break
                    try:
                        taken = self._take_over(proc, conn, reply)
                    except (EOFError, OSError) as exc:
                        taken, failed = False, exc
                    if taken:
                        proc = None
                        return
                if failed is not None:  # outside the lock: telling the keeper takes it
                    log.warning("the model keeper was not replaced after the commit: %s", failed)
                    self._no_successor(generation)
                    return
                time.sleep(0.2)  # an automation is held: its decision comes first
        finally:
            self._successor = None
            if proc is not None:
                _retire_keeper(proc, conn)

    def _no_successor(self, generation: int) -> None:
        """The current keeper stays in service: the next request tells it to prepare its scripts' processes
        again (no extra round trip; until then a script's process starts on demand)."""
        if generation == self._generation and not self._closed:
            self._resume_spares = True

    def _take_over(self, proc: subprocess.Popen[bytes] | SpawnedKeeper, conn: Connection,
                   reply: dict[str, Any]) -> bool:
        """Put the successor in service (caller holds self._lock): False while an automation is held."""
        with self._send_lock:  # aborts wait: one sent now reaches one keeper or the other, never neither
            state: dict[str, Any] = {}
            if self._conn is not None:
                try:
                    self._conn.send({"op": "handover_state"})
                    if self._conn.poll(60):
                        state = self._conn.recv()
                except (EOFError, OSError):
                    state = {}  # the old keeper is gone: the successor holds the committed model anyway
            if state.get("held"):
                return False
            conn.send({"op": "adopt_state", "expired": state.get("expired") or {}, "aborted": state.get("aborted") or []})
            adopted = conn.recv() if conn.poll(60) else {}
            if not adopted.get("ok"):
                raise OSError("the successor keeper did not take the handover")
            old_proc, old_conn = self._proc, self._conn
            self._proc, self._conn = proc, conn
            self._rss_at_open = reply.get("rss_at_open") or resident_bytes(proc.pid)
            self._take_state(adopted)
        self._note_sandbox(reply)
        self.handovers += 1
        if old_proc is not None and old_conn is not None:
            threading.Thread(target=_retire_keeper, args=(old_proc, old_conn), name="keeper-retire",
                             daemon=True).start()
        return True

    def _spawn_keeper(self, path: Path, env: dict[str, str], expect_signature: tuple[int, ...] | None,
                      ) -> tuple[SpawnedKeeper, Connection]:
        """Windows (no fork, no fd passing): multiprocessing's 'spawn'; the keeper replaces its environment with
        `env` before it loads anything, so the spares it starts for scripts inherit only that."""
        from ifc_host.keeper_spawned import serve_in_spawned_process

        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe(duplex=True)
        process = context.Process(target=serve_in_spawned_process, name="nexus-ifc-keeper", args=(
            theirs, str(path), str(self.save_path), self.hold_timeout_s, self.isolation, env, expect_signature))
        process.start()
        theirs.close()
        return SpawnedKeeper(process), ours

    def _stop_keeper(self) -> None:
        if self._conn is not None:
            try:
                self._conn.send({"op": "shutdown"})
            except OSError:
                pass
            self._conn.close()
            self._conn = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None


def _retire_keeper(proc: subprocess.Popen[bytes] | SpawnedKeeper, conn: Connection) -> None:
    """Stop a keeper that is out of service (replaced, or a successor not needed): ask, then kill."""
    try:
        conn.send({"op": "shutdown"})
    except OSError:
        pass
    conn.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()



def _as_cancelled(result: dict[str, Any], message: str) -> dict[str, Any]:
    """A discarded automation's result, told as a cancel: nothing of it is in the model."""
    out = {k: v for k, v in result.items() if k not in ("change_details", "validation", "unknown")}
    return {**out, "ok": False, "committed": False, "held": False, "cancelled": True,
            "changes": NO_CHANGES.to_dict(), "error": ErrorInfo("Cancelled", message).to_dict()}


def _keeper_lost(message: str) -> dict[str, Any]:
    return {"ok": False, "committed": False, "stdout": "", "failures": [], "duration_ms": 0,
            "changes": NO_CHANGES.to_dict(), "error": ErrorInfo("HostCrash", message).to_dict()}
