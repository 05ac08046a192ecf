"""The model keeper: a single-threaded process holding the committed model, giving each script its own
process (forked, or a warm spawned spare: see isolation.py).

Started fresh (`python -m ifc_host.keeper`, never forked from the multi-threaded runtime), so forking it is
safe. A script's failure, hang or native crash only ever ends its own process: rolling back costs a kill,
whatever the model's size. A successful automation's process sends the serialised model; the keeper compares
it with the committed model entity by entity, and from that alone works out what the run changed, its report,
validation and IDS check (trusted_report.py: nothing the script's process says decides them). A run that
changed nothing writes nothing. Otherwise the keeper writes it beside the saved file and patches its own
committed model with the records that changed, each checked as applied (model_patch.InPlace; what the report
needs of the model before the run is read first), so nothing is parsed in full; a refused, held or failed
commit puts the model back the same checked way (or, if that cannot be shown exact, reads it again). A run
with a rule set (its checks read both models at once) rebuilds a shadow copy of the committed file instead,
and when neither can be shown exact the written file is re-opened (checked). The records a commit compares
against are the previous commit's, or the file's as the predecessor keeper wrote it, or, for the keeper that
opened the file, serialised ahead by a forked child while it was idle (baseline_child.py). Holding a lock on
the folder, it renames the file over the saved one unless that file
changed on disk since this keeper last read or wrote it (another host or program saved it: the commit is
refused rather than silently overwriting their work). The keeper applies the handover policy the runtime
sends with each request (handover.py) and says in its commit reply (`successor`) whether a fresh keeper on the
new file takes over; the runtime starts one only then (executor.py), and this keeper then prepares no more
script processes ahead unless a later request says the successor did not come (`resume_spares`). A held automation (policy ask) is worked out the same way when it is held, and
keeping it commits exactly the model that was reported.

Requests arrive as dicts on a multiprocessing Connection (one at a time) and each gets one reply, except
`abort` {request_id}, which gets none: while a script runs the keeper waits on the script and on its
connection at once, so an abort for the running request kills the script's process at once and that
request's own reply says it was cancelled (rolled back, the model unchanged); an abort for a request not yet
arrived is remembered, and that request is then refused without running. A held automation is discarded
by the runtime's `decide`, not here.

The keeper is the only owner of the held automation, its expiry and the committed file's signature: every
reply (and the first message) carries them under "keeper" (Keeper.state), and the runtime reads them from
there (executor.KeeperState) rather than keeping copies of its own.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import ifcopenshell

from ifc_host.baseline_child import BaselineChild, serialisable_ahead
from ifc_host.file_identity import file_signature
from ifc_host.handover import HandoverPolicy, resident_bytes
from ifc_host.isolation import (
    ForkedRun,
    ForkStrategy,
    ScriptProcess,
    SpawnedRun,
    SpawnStrategy,
)
from ifc_host.keeper_process import (
    ABORTS_REMEMBERED,
    COMMIT_TIMEOUT_S,
    ISOLATIONS,
    SNAPSHOT_TIMEOUT_S,
    default_isolation,
)
from ifc_host.model_diff import DATA_START, HINT_MAX_RECORDS, NotCanonical, data_section, record_count
from ifc_host.model_file import (
    BackgroundFsync,
    BadModelError,
    describe_context,
    describe_document,
    directory_lock,
    open_checked,
    replace_atomically,
    write_beside,
)
from ifc_host.model_patch import ModelSpoilt
from ifc_host.read_server import ServedRun
from ifc_host.refs import ReferenceProblem
from ifc_host.script import STDOUT_CAP_BYTES
from ifc_host.trusted_report import IdsStates, Prepared, ReportAhead, prepare, warm_ids
from shared_contract.host_messages import NO_CHANGES, ErrorInfo, ExecuteCommand

FULL_COLLECT_EVERY = 64  # replies between full garbage collections of the keeper (see Keeper._freeze_for_fork)
_CRASH_FRAME = re.compile(r'File "<script>", line (\d+)')
RETIRED_KEPT = 8  # killed script processes still being torn down, left for a later reply to reap (reap_retired)
SPARE_WAIT_S = 300.0
# A read still running this long after it started gets its spare replaced meanwhile (strategy.replace_taken);
# a shorter one's is replaced after its reply: forking the keeper (3 to 5 ms on a quiet machine, tens under
# load) takes longer than a short read, and the keeper reads the read's result only once the fork is done. Long
# enough that a read slowed by the machine's load is rarely caught by a fork just before its end.
READ_REPLACES_SPARE_AFTER_S = 0.1
PARTIAL_READ_S = 0.05  # how long a readable script pipe is read before the keeper listens for aborts again
CANCELLED_RUNNING = "cancelled while running: rolled back, the model is unchanged"
CANCELLED_COLLECTING = "cancelled while running: the script was stopped; the model is unchanged"
CANCELLED_BEFORE = "cancelled before it ran: nothing ran, the model is unchanged"
_ABORTED = object()  # what _await_script returns when an abort for the running request arrived


@dataclass
class HeldAutomation:
    run: ScriptProcess
    result: dict[str, Any]
    expires: float
    prepared: Prepared | None = None  # what keeping it commits (worked out when it was held)
    script_ms: float = 0.0
    prepare_ms: float = 0.0


class Keeper:
    def __init__(self, model: ifcopenshell.file, save_path: Path, hold_timeout_s: float,
                 private_fds: tuple[int, ...] = (), model_path: Path | None = None, isolation: str = "fork") -> None:
        self.model = model
        self.committed_path = model_path or save_path  # the file the committed model was last read from
        self.protected_paths = sorted({str(save_path), str(self.committed_path)})
        self.save_path = save_path
        self.disk_signature = file_signature(save_path)  # the saved file as this keeper last read or wrote it
        self.committed_signature = file_signature(self.committed_path)  # the file self.model was read from
        # The committed file as this keeper last read, wrote or looked at it: the runtime compares the file on
        # disk with it to notice edits made outside (reported in every reply, see state()).
        self.seen_signature = self.committed_signature
        self.hold_timeout_s = hold_timeout_s
        self.held: HeldAutomation | None = None
        self.retired: list[ScriptProcess] = []
        self.replaced_models: list[ifcopenshell.file] = []  # freed after the reply (a big model takes a while)
        self.expired: dict[str, str] = {}
        self.workdir = Path(tempfile.mkdtemp(prefix="nexus-keeper-"))
        if isolation == "fork":
            self.strategy: ForkStrategy | SpawnStrategy = ForkStrategy(self.workdir, private_fds)
        else:
            self.strategy = SpawnStrategy(self.workdir, self.committed_path)
        self._frozen_model: ifcopenshell.file | None = None
        self._freezes_since_collect = 0
        self.baseline: bytes | None = None  # the committed model's records as IfcOpenShell writes them
        self._baseline_child: BaselineChild | None = None  # serialising them ahead of the first commit
        self._baseline_tried = False
        self._baseline_spent: BaselineChild | None = None
        self._ids_states = IdsStates()
        self._freeze_for_fork()
        self.sandbox = self.strategy.probe(model, self.committed_path)
        self.connection: Connection | None = None  # the runtime's channel, listened to while a script runs
        self.runtime_gone = False  # the connection ended mid-script: nobody will read a reply
        self.aborted: OrderedDict[str, None] = OrderedDict()  # request ids an abort named
        self.queued: deque[dict[str, Any]] = deque()  # requests that arrived while a script ran
        # When a commit hands over to a successor keeper (handover.py; the runtime sends its policy with each
        # execute and decide). None: never (a keeper not started by the runtime's serve loop).
        self.handover: HandoverPolicy | None = None
        self.rss_at_open: int | None = None  # this process's resident memory once its model was open

    def note_abort(self, request_id: str) -> None:
        self.aborted[request_id] = None
        while len(self.aborted) > ABORTS_REMEMBERED:
            self.aborted.popitem(last=False)

    # --- requests -----------------------------------------------------------------------------------
    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if request.get("handover") is not None:
            self.handover = HandoverPolicy(**request["handover"])
        if request.get("resume_spares"):  # the successor a commit announced did not take over: serve on
            self.strategy.replenishing = True
        if op == "execute":
            return self.execute(ExecuteCommand.from_dict(request["command"]), request.get("model_name"))
        if op == "decide":
            return self.decide(request["request_id"], request["decision"])
        if op == "snapshot_held":
            return self.snapshot_held(Path(request["path"]))
        if op == "document":
            return {"ok": True, "document": describe_document(self.model, self.save_path)}
        if op == "context":
            return {"ok": True, "context": describe_context(self.model)}
        if op == "reload":
            return self.reload(Path(request["path"]))
        if op == "warm":
            if self.held is None:
                self.strategy.wait_ready(self.model, self.committed_path)
            return {"ok": True}
        if op == "handover_state":
            return {"ok": True, **self.handover_state()}
        if op == "adopt_state":
            self.adopt_state(request)
            return {"ok": True}
        return {"ok": False, "message": f"unknown keeper request {op!r}"}

    def state(self) -> dict[str, Any]:
        """What this keeper alone knows and the runtime reads from every reply instead of tracking it: the held
        automation and how long until it is discarded undecided, the file holding the committed model and its
        signature (file_identity.file_signature) as this keeper last saw it."""
        held = self.held
        return {"held": None if held is None else {"request_id": held.run.request_id,
                                                   "expires_in_s": max(0.0, held.expires - time.monotonic())},
                "committed_path": str(self.committed_path),
                "signature": list(self.seen_signature) if self.seen_signature else None}

    def handover_state(self) -> dict[str, Any]:
        """What a successor keeper must know to answer as this one would (see executor.py's handover): the
        decisions that arrive too late, the aborts of requests not yet arrived. Only asked while nothing is
        held or running, so there is no script process to pass on."""
        return {"held": self.held is not None, "expired": dict(self.expired), "aborted": list(self.aborted)}

    def adopt_state(self, state: dict[str, Any]) -> None:
        self.expired.update(state.get("expired") or {})
        for request_id in state.get("aborted") or []:
            self.note_abort(str(request_id))

    def execute(self, command: ExecuteCommand, model_name: str | None = None) -> dict[str, Any]:
        if self.held is not None:
            return _failure("Busy", f"automation {self.held.run.request_id} awaits a keep/discard decision")
        if command.request_id in self.aborted or self._aborted_while_spare_loads(command.request_id):
            return {**_failure("Cancelled", CANCELLED_BEFORE), "cancelled": True}
        job = script_job(command, model_name)
        try:
            run = self.strategy.start(self.model, self.committed_path, {**job, "protected_paths": self.protected_paths})
        except ReferenceProblem as exc:
            return _failure("BadReference", f"{exc}; nothing ran, the model is unchanged")
        except (RuntimeError, OSError) as exc:
            return _failure("HostCrash", f"{exc}; the model is unchanged and the host keeps running")
        if command.ids and command.mode == "automate":
            warm_ids(command.ids)  # while the script runs: the keeper checks the IDS after it
        try:
            replace_at = run.started + READ_REPLACES_SPARE_AFTER_S if command.mode == "collect" else None
            message = self._await_script(run, run.started + float(command.timeout_s), replace_at)
        except TimeoutError:
            run.kill()
            outcome = self._collect_output(run, {"ok": False, "timed_out": True, "error": ErrorInfo(
                "Timeout", f"the script ran longer than its {float(command.timeout_s):g} s limit and was stopped; "
                           "the model is unchanged").to_dict()})
            run.close()
            return self._finish(run, outcome, committed=False)
        if message is _ABORTED:
            return self._cancelled(run)
        if message is None:
            return self._crashed(run)
        result = self._collect_output(run, message["result"])
        if not result["ok"] or command.mode == "collect":
            self._retire(run)
            return self._finish(run, result, committed=False)
        if command.holds:
            return self._hold(run, result, job)
        return self._commit(run, result, job)

    def _await_script(self, run: ScriptProcess, deadline: float, replace_at: float | None = None) -> Any:
        """The script's next message (None when its process ended), or _ABORTED as soon as an abort for it
        arrives on the runtime's connection; TimeoutError at the deadline. `replace_at`: a read's, when the
        spare it took is replaced if it is still running (see READ_REPLACES_SPARE_AFTER_S)."""
        if replace_at is not None:
            try:
                return self._await_script(run, min(deadline, replace_at))
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise
            self.strategy.replace_taken(self.model, self.committed_path)
        if self.connection is None or self.runtime_gone:
            return run.read(deadline)
        try:
            return run.read(0.0)  # a message already buffered (a past deadline never waits)
        except TimeoutError:
            pass
        handle = _readable_handle(run)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready = wait([handle, self.connection], remaining)
            if self.connection in ready and self._abort_arrived(run.request_id):
                return _ABORTED
            if handle in ready:
                try:
                    return run.read(time.monotonic() + PARTIAL_READ_S)
                except TimeoutError:
                    continue  # part of a long message: the rest follows

    def _aborted_while_spare_loads(self, request_id: str) -> bool:
        """Spawn: the process for the next script may still be loading the model (seconds); an abort that
        arrives meanwhile refuses the job before it starts. False once the spare has something to say."""
        spare = self.strategy.spare
        if self.connection is None or self.runtime_gone or spare is None or spare[1] != self.committed_path \
                or spare[0].sandbox:
            return False
        handle = _readable_handle(spare[0])
        while True:
            ready = wait([handle, self.connection], SPARE_WAIT_S)
            if self.connection in ready and self._abort_arrived(request_id):
                return True
            if handle in ready or not ready:
                return False  # ready (or gone): strategy.start reads what it said

    def _abort_arrived(self, request_id: str) -> bool:
        """Read what the runtime sent mid-script; True when it aborts `request_id` (or the runtime is gone)."""
        assert self.connection is not None
        try:
            request = self.connection.recv()
        except (EOFError, OSError):
            self.runtime_gone = True
            return True  # nobody will read this script's result: stop it
        if request.get("op") == "abort":
            self.note_abort(str(request.get("request_id")))
            return request.get("request_id") == request_id
        self.queued.append(request)  # answered after this script's reply, in order
        return request.get("op") == "shutdown"  # the host is stopping: the script goes with it

    def _cancelled(self, run: ScriptProcess) -> dict[str, Any]:
        run.kill()
        message = CANCELLED_RUNNING if run.mode == "automate" else CANCELLED_COLLECTING
        outcome = self._collect_output(run, {"ok": False, "cancelled": True,
                                             "error": ErrorInfo("Cancelled", message).to_dict()})
        run.close()
        return self._finish(run, outcome, committed=False)

    def reload(self, path: Path) -> dict[str, Any]:
        """Adopt the file on disk (edited by another program) as the committed model."""
        if self.held is not None:
            return {"ok": False, "error": "an automation awaits a decision"}
        self._drop_baseline_child()
        signature = file_signature(path)
        self.seen_signature = signature  # read or not, this version is known: it is not reloaded again
        try:
            self.model = open_checked(path)
        except BadModelError as exc:
            return {"ok": False, "error": str(exc)}
        self.committed_path = path
        self.committed_signature = signature
        self.baseline = None
        self.disk_signature = file_signature(self.save_path)
        self.strategy.after_run(self.committed_path, model_changed=True)
        return {"ok": True}

    def decide(self, request_id: str, decision: str) -> dict[str, Any]:
        held = self.held
        if held is None or held.run.request_id != request_id:
            why = self.expired.get(request_id) or "no automation with this request id awaits a decision"
            return {"unknown": True, "message": f"cannot apply '{decision}' to request {request_id}: {why}"}
        self.held = None
        if decision == "keep":
            return {**self._keep(held), "held": False}
        self._retire(held.run)
        _forget(held.prepared)
        return {**self._finish(held.run, held.result, committed=False), "held": False}

    def snapshot_held(self, path: Path) -> dict[str, Any]:
        """The held model, as keeping it would commit it (the bytes its report was worked out from)."""
        if self.held is None:
            return {"ok": False, "message": "no automation is held"}
        prepared = self.held.prepared
        try:
            if prepared is not None and prepared.data is not None:
                path.write_bytes(prepared.data)
            else:  # it changed nothing: the held model is the committed one
                shutil.copyfile(self.committed_path, path)
        except OSError as exc:
            return {"ok": False, "message": f"the held model could not be written to {path}: {exc}"}
        return {"ok": True}

    def expire_hold(self) -> None:
        if self.held is not None and time.monotonic() >= self.held.expires:
            request_id = self.held.run.request_id
            self.held.run.close()
            _forget(self.held.prepared)
            self.held = None
            self.strategy.after_run(self.committed_path, model_changed=False)
            self.expired[request_id] = (f"no decision arrived within {self.hold_timeout_s:g} s, so the "
                                        "automation was discarded")

    def seconds_until_hold_expires(self) -> float | None:
        return None if self.held is None else max(0.0, self.held.expires - time.monotonic())

    def _retire(self, run: ScriptProcess) -> None:
        """Done with this process: kill it now, reap it after the reply is sent (tearing down a process that
        shares a big model's pages takes tens of milliseconds the caller need not wait for)."""
        run.stop()
        self.retired.append(run)

    def reap_retired(self, wait: bool = True) -> None:
        """Close finished script processes. `wait=False` (after a reply): only those the kernel has torn down
        already, and at most RETIRED_KEPT left for the next reply, so a call that follows at once does not
        wait for the teardown of the last one (a process sharing a big model's pages takes tens of ms)."""
        for run in list(self.retired):
            if wait or run.ended() or len(self.retired) > RETIRED_KEPT:
                self.retired.remove(run)
                run.close()

    def after_reply(self) -> None:
        """Housekeeping the caller need not wait for: reap finished scripts, free the model a commit replaced,
        get the next spare ready."""
        self.reap_retired(wait=False)
        if self._baseline_spent is not None and self._baseline_spent.reap(block=False):
            self._baseline_spent = None
        self.replaced_models.clear()
        if self.held is None:
            self._freeze_for_fork()
            self.strategy.replenish(self.model, self.committed_path)
            self._serialise_ahead()

    def _serialise_ahead(self) -> None:
        """Once idle, with no records of the committed model to compare a commit against: have a forked child
        serialise them (baseline_child.py), once per committed model."""
        if self.baseline is not None or self._baseline_tried or not serialisable_ahead():
            return
        self._baseline_tried = True
        try:
            self._baseline_child = BaselineChild(self.model)
        except OSError:
            return  # the first commit serialises the model itself
        if isinstance(self.strategy, ForkStrategy):  # never left open in a script's process
            self.strategy.private_fds = (*self.strategy.private_fds, self._baseline_child.fd)

    def _take_baseline(self) -> bytes | None:
        child = self._baseline_child
        if child is None:
            return None
        self._forget_baseline_fd(child)
        self._baseline_child = None
        records = child.take()
        self._baseline_spent = child  # reaped after the reply: a process sharing a big model ends slowly
        return records

    def _drop_baseline_child(self) -> None:
        """The committed model is another one now: what the child serialises is not its records."""
        child, self._baseline_child, self._baseline_tried = self._baseline_child, None, False
        if child is not None:
            self._forget_baseline_fd(child)
            child.discard()

    def _forget_baseline_fd(self, child: BaselineChild) -> None:
        if isinstance(self.strategy, ForkStrategy):
            self.strategy.private_fds = tuple(fd for fd in self.strategy.private_fds if fd != child.fd)

    def _freeze_for_fork(self) -> None:
        """Fork: move the keeper's Python objects out of the cyclic collector's reach before the next script's
        process is forked, so a collection in that process (a script creating many objects) does not write to,
        and so copy, every page holding them. Garbage is collected first whenever the model changed, and every
        FULL_COLLECT_EVERY replies (frozen objects are never collected)."""
        if self.strategy.name != "fork":
            return
        self._freezes_since_collect += 1
        if self._frozen_model is not self.model or self._freezes_since_collect >= FULL_COLLECT_EVERY:
            gc.unfreeze()
            gc.collect()
            self._frozen_model = self.model
            self._freezes_since_collect = 0
        gc.freeze()

    def shutdown(self) -> None:
        self._drop_baseline_child()
        if self._baseline_spent is not None:
            self._baseline_spent.discard()
        self.reap_retired()
        if self.held is not None:
            self.held.run.close()
            self.held = None
        self.strategy.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    # --- script processes -------------------------------------------------------------------------
    def _collect_output(self, run: ScriptProcess, result: dict[str, Any]) -> dict[str, Any]:
        stdout, over_cap = _read_capped(run.files["stdout"])
        out = {"failures": [], "changes": {"added": [], "modified": [], "deleted": []}, **result, "stdout": stdout}
        out["stdout_truncated"] = bool(result.get("stdout_truncated")) or over_cap
        if result.get("ok") and run.mode == "automate" and out.get("epilogue_stdout") is None:
            epilogue, _ = _read_capped(run.files["epilogue"])
            out["epilogue_stdout"] = epilogue or None
        return out

    def _crashed(self, run: ScriptProcess) -> dict[str, Any]:
        how = run.how_it_ended()
        crash_log, _ = _read_capped(run.files["crash"])
        frames = _CRASH_FRAME.findall(crash_log)
        kind = "LimitReached" if how.startswith("stopped:") else "HostCrash"  # a limit ended it (limits.py)
        error = ErrorInfo(kind, f"{how}; the model is unchanged and the host keeps running",
                          int(frames[0]) if frames else None,
                          "\n".join(line.strip() for line in crash_log.splitlines() if '"<script>"' in line))
        result = self._collect_output(run, {"ok": False, "error": error.to_dict()})
        run.close()
        return self._finish(run, result, committed=False)

    def _commit(self, run: ScriptProcess, result: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
        """The whole commit: the model from the script's process, what it changed (worked out here), the
        report, then write, fsync and rename; its time is `commit_ms`, the script's own `script_ms`."""
        script_ms = _ms_since(run.started)
        started = time.monotonic()
        target = Path(os.path.realpath(self.save_path))  # a symlinked model path stays a symlink
        written: list[Path] = []
        syncs: list[BackgroundFsync] = []  # the disk's wait runs while the report is worked out

        def write(data: bytes) -> Path:
            path = _write(written, write_beside(target, data, sync=False))
            syncs.append(BackgroundFsync(path))
            return path

        def durable() -> None:
            for sync in syncs:
                sync.wait()

        try:
            prepared = self._prepare(run, result, job, "commit", write)
            if isinstance(prepared, dict):
                return prepared
            return self._put_in_place(run, prepared, target, script_ms, started, durable)
        except OSError as exc:
            return self._timed(self._commit_failed(run, result, f"saving to {self.save_path} failed: {exc}"),
                               script_ms, started)
        finally:
            for sync in syncs:
                with contextlib.suppress(OSError):
                    sync.wait()
            for path in written:
                path.unlink(missing_ok=True)

    def _hold(self, run: ScriptProcess, result: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
        """Work the held automation's report out now, on the model it would commit; the process stays until
        the decision (its model is not asked for again: keeping it commits what was reported)."""
        script_ms = _ms_since(run.started)
        started = time.monotonic()
        held_path = self.workdir / "held.ifc"
        try:
            prepared = self._prepare(run, result, job, "snapshot", lambda data: _write([], held_path, data))
        except OSError as exc:
            self._retire(run)
            return self._timed(self._commit_failed(run, result, f"the held model could not be written: {exc}"),
                               script_ms, started)
        if isinstance(prepared, dict):
            return prepared
        self._revert(prepared)  # the committed model stays as it is until the decision (keeping patches it again)
        if not prepared.result.get("ok"):
            self._retire(run)
            return self._timed(self._finish(run, prepared.result, committed=False), script_ms, started)
        prepare_ms = _ms_since(started)
        self.held = HeldAutomation(run, prepared.result, time.monotonic() + self.hold_timeout_s, prepared,
                                   script_ms, prepare_ms)
        return {**prepared.result, "committed": False, "held": True, "duration_ms": _ms_since(run.started),
                "script_ms": script_ms, "commit_ms": prepare_ms}

    def _keep(self, held: HeldAutomation) -> dict[str, Any]:
        self._retire(held.run)
        started = time.monotonic() - held.prepare_ms / 1000
        prepared = held.prepared
        assert prepared is not None
        target = Path(os.path.realpath(self.save_path))
        held_file = prepared.path
        written: list[Path] = []
        try:
            if prepared.data is not None:
                prepared.path = _write(written, write_beside(target, prepared.data))
                self._patch_again(prepared)
            return self._put_in_place(held.run, prepared, target, held.script_ms, started)
        except (OSError, BadModelError) as exc:
            return self._timed(self._commit_failed(held.run, held.result, f"saving to {self.save_path} failed: {exc}"),
                               held.script_ms, started)
        finally:
            for path in written:
                path.unlink(missing_ok=True)
            if held_file is not None:
                held_file.unlink(missing_ok=True)

    def _patch_again(self, prepared: Prepared) -> None:
        """Keeping a held automation whose report was worked out on the committed model patched in place: patch
        it again (checked as the first time), or, if that cannot be shown exact, read the written file."""
        if prepared.patch is None:
            return
        try:
            prepared.patch.apply()
            return
        except NotCanonical:
            pass
        except ModelSpoilt:
            self._reread_committed()
        assert prepared.path is not None
        prepared.patch, prepared.rebuilt = None, False
        prepared.adopted = open_checked(prepared.path)

    def _prepare(self, run: ScriptProcess, result: dict[str, Any], job: dict[str, Any], op: str,
                 write: Any) -> Prepared | dict[str, Any]:
        """The model from the script's process and the trusted report of it, or the failed reply."""
        script_ms = _ms_since(run.started)
        started = time.monotonic()
        _widen_pipe(run)
        run.send({"op": op})
        # While the script's process serialises (on the other core): the committed model's own records, if no
        # earlier commit left them; a shadow copy only for a rule set (its checks need both models at once).
        if self.baseline is None:
            self.baseline = self._take_baseline() or data_section(self.model.to_string().encode("utf-8"))
        baseline_records = record_count(self.baseline)  # counted now, not once the model has come
        shadow = self._read_shadow() if op == "commit" and job.get("rules") else None
        report_job = {**job, "mode": run.mode or job.get("mode"), "model_name": self.save_path.name}
        deadline = time.monotonic() + (COMMIT_TIMEOUT_S if op == "commit" else SNAPSHOT_TIMEOUT_S)
        ahead, written = None, None
        if op == "commit":  # the process says first which records it changed: the commit is worked out on that
            written = _read_message(run, deadline)
            if written is not None and written.get("kind") != "written":  # the hint (or whatever came instead)
                if written.get("kind") == "hint":
                    ahead = self._work_out_ahead(written, result, report_job, baseline_records)
                written = None
        data = _read_model(run, deadline, written)
        if op == "commit":
            self._retire(run)
        if isinstance(data, str):
            if op != "commit":
                self._retire(run)
            self._drop_ahead(ahead)
            return self._timed(self._commit_failed(run, result, f"the model could not be written: {data}"),
                               script_ms, started)
        try:
            prepared = prepare(self.model, self.baseline, data, result, report_job, write, self.workdir,
                               self._ids_states, shadow, in_place=True, baseline_records=baseline_records,
                               ahead=ahead)
        except ModelSpoilt:
            self._reread_committed()
            prepared = prepare(self.model, self.baseline, data, result, report_job, write, self.workdir,
                               self._ids_states, shadow)
        if isinstance(prepared, str):
            if op != "commit":
                self._retire(run)
            return self._timed(self._commit_failed(run, result, prepared), script_ms, started)
        return prepared

    def _work_out_ahead(self, hint: dict[str, Any], result: dict[str, Any], report_job: dict[str, Any],
                        baseline_records: int) -> ReportAhead | None:
        """The commit worked out on the records the script's process says the run changed (trusted_report.
        ReportAhead: taken only if the model it then sends has exactly those), while it serialises the model.
        None when the hint names none, or is not one."""
        records, deleted = hint.get("records"), hint.get("deleted")
        if not isinstance(records, dict) or not isinstance(deleted, list) or \
                len(records) + len(deleted) > HINT_MAX_RECORDS:
            return None
        try:
            changed = {_entity_id(key): line.encode("utf-8") for key, line in records.items() if isinstance(line, str)}
        except UnicodeEncodeError:  # (a lone surrogate: no record IfcOpenShell writes)
            return None
        gone = {_entity_id(value) for value in deleted}
        if None in changed or None in gone or len(changed) != len(records):
            return None
        try:
            return ReportAhead(self.model, baseline_records, changed, gone, result, report_job,  # type: ignore[arg-type]
                               self.workdir, self._ids_states)
        except NotCanonical:
            return None
        except ModelSpoilt:
            self._reread_committed()
            return None

    def _drop_ahead(self, ahead: ReportAhead | None) -> None:
        if ahead is None:
            return
        try:
            ahead.drop()
        except ModelSpoilt:
            self._reread_committed()

    def _reread_committed(self) -> None:
        """The committed model again, after patching it in place went wrong and could not be undone
        (model_patch.ModelSpoilt): from its file when that is still the one it was read from, else from its
        own records (the baseline: IfcOpenShell's serialisation of it before the patch)."""
        model = None
        path, expected = self.committed_path, self.committed_signature
        if expected is not None and file_signature(path) == expected:
            try:
                model = open_checked(path)
            except BadModelError:
                model = None
        if model is None:
            assert self.baseline is not None
            text = self.model.to_string()
            header = text[:text.find(DATA_START.decode("ascii"))]
            model = ifcopenshell.file.from_string(header + DATA_START.decode("ascii") + self.baseline.decode("utf-8")
                                                  + "ENDSEC;\nEND-ISO-10303-21;\n")
        self.replaced_models.append(self.model)
        self.model = model
        self._ids_states.forget()
        self._frozen_model = None
        self.strategy.after_run(self.committed_path, model_changed=True)

    def _revert(self, prepared: Prepared | None) -> None:
        """Put the committed model back as it was if the prepared commit patched it in place."""
        if prepared is None or prepared.patch is None or not prepared.patch.applied:
            return
        try:
            prepared.patch.revert()
        except ModelSpoilt:
            self._reread_committed()

    def _read_shadow(self) -> ifcopenshell.file | None:
        """A second copy of the committed model, read from its file while the script's process serialises the
        model it commits (on the other core): the commit rebuilds its model in it from the records that
        changed (model_patch.py) rather than parsing everything it was sent. None when the file is not the one
        the committed model was read from (another program saved it), or cannot be read."""
        path, expected = self.committed_path, self.committed_signature
        if expected is None or file_signature(path) != expected:
            return None
        try:
            shadow = open_checked(path)
        except BadModelError:
            return None
        return shadow if file_signature(path) == expected else None

    def _put_in_place(self, run: ScriptProcess, prepared: Prepared, target: Path, script_ms: float,
                      started: float, durable: Any = None) -> dict[str, Any]:
        """Rename the prepared model over the saved file (nothing to do when it changed nothing); `durable`
        returns once the written file is on disk (raises OSError if it could not be)."""
        result = prepared.result
        if not result.get("ok"):
            return self._timed(self._finish(run, result, committed=False), script_ms, started)
        if prepared.unchanged:  # committed as it is: the saved file, and the processes ready for the next script
            self.seen_signature = file_signature(self.committed_path)
            reply = {**self._finish(run, {**result, "unchanged": True}, committed=False), "committed": True}
            return self._timed({**reply, "document": describe_document(self.model, self.save_path)}, script_ms, started)
        assert prepared.path is not None and prepared.adopted is not None
        with directory_lock(target.parent):
            if file_signature(target) != self.disk_signature:
                self._revert(prepared)
                return self._timed(self._conflict(run, result, target), script_ms, started)
            try:
                if durable is not None:
                    durable()
                replace_atomically(prepared.path, target)
            except OSError:
                self._revert(prepared)
                raise
            self.disk_signature = file_signature(target)
            self.committed_signature = self.seen_signature = self.disk_signature
        if prepared.adopted is not self.model:
            self.replaced_models.append(self.model)
        self._frozen_model = None  # collect what the commit left before the next fork (see _freeze_for_fork)
        successor = self._successor_follows()
        if successor:  # the successor prepares the next scripts' processes; until then they start on demand
            self.strategy.replenishing = False
        self.model = prepared.adopted
        self.baseline = prepared.records
        if prepared.ids_after is not None:
            self._ids_states.put(self.model, *prepared.ids_after)
        self.committed_path = self.save_path
        # What the host's next hello says about the model, in this reply: asking for it separately would wait
        # for the housekeeping after the reply (reaping the script's process, freeing the replaced model).
        document = describe_document(self.model, self.save_path, prepared.entities)
        return self._timed({**self._finish(run, result, committed=True), "document": document,
                            "model_read": _how_read(prepared), "worked_out_ahead": prepared.ahead,
                            "successor": successor}, script_ms, started)

    def _successor_follows(self) -> bool:
        """Whether the commit just renamed into place hands over to a fresh keeper (handover.py): the reply
        says so, and the runtime starts the successor only then."""
        if self.handover is None or self.disk_signature is None:
            return False
        return self.handover.hands_over(self.disk_signature[2], resident_bytes(os.getpid()), self.rss_at_open)

    def _timed(self, reply: dict[str, Any], script_ms: float, started: float) -> dict[str, Any]:
        return {**reply, "script_ms": script_ms, "commit_ms": _ms_since(started)}

    def _conflict(self, run: ScriptProcess, result: dict[str, Any], target: Path) -> dict[str, Any]:
        """The saved file changed on disk since we read or wrote it: keep their work, refuse ours, and adopt
        theirs so the next script runs against what is on disk."""
        message = (f"{self.save_path.name} was changed on disk by another program or IFC host since this host last "
                   "read or saved it; saving now would overwrite those changes, so this automation was NOT saved")
        try:
            signature = file_signature(target)
            self.model = open_checked(target)
            self._drop_baseline_child()
            self.committed_signature = signature
            self.committed_path = self.save_path
            self.baseline = None
            self.disk_signature = file_signature(target)
            message += ("; the host has reloaded the file as it is on disk now: look at the model again and redo "
                        "the change on that version")
        except BadModelError as exc:
            message += f"; the file on disk could not be read back ({exc}), so the host keeps its own version"
        self.seen_signature = file_signature(target)
        failed = {**result, "ok": False, "conflict": True, "error": ErrorInfo("CommitConflict", message).to_dict()}
        return self._finish(run, failed, committed=False)

    def _commit_failed(self, run: ScriptProcess, result: dict[str, Any], message: str) -> dict[str, Any]:
        failed = {**result, "ok": False,
                  "error": ErrorInfo("CommitFailed", message + "; the model is unchanged").to_dict()}
        return self._finish(run, failed, committed=False)

    def _finish(self, run: ScriptProcess, result: dict[str, Any], committed: bool) -> dict[str, Any]:
        if self.held is None:
            changed = committed or bool(result.get("conflict"))
            if changed:  # spares of the old model: killed now, torn down after the reply (reap_retired)
                while self.strategy.spares:
                    self._retire(self.strategy.spares.pop()[0])
            self.strategy.after_run(self.committed_path, model_changed=changed)
        return {**result, "committed": committed, "duration_ms": _ms_since(run.started)}


def script_job(command: ExecuteCommand, model_name: str | None) -> dict[str, Any]:
    """What the script's process and the trusted report are given of an execute: its wire fields, with the
    defaults the host applies (hold only for an automation, validation warn) and the epilogue's code."""
    return {**command.to_dict(), "hold": command.holds, "validation": command.validation or "warn",
            "epilogue_code": command.epilogue.code if command.epilogue else None,
            "refs": [ref.to_dict() for ref in command.refs or ()], "model_name": model_name}


def _failure(kind: str, message: str) -> dict[str, Any]:
    return {"ok": False, "committed": False, "stdout": "", "failures": [], "changes": NO_CHANGES.to_dict(),
            "duration_ms": 0, "error": ErrorInfo(kind, message).to_dict()}


def _readable_handle(run: ScriptProcess) -> Any:
    """What multiprocessing.connection.wait can wait on for this script's messages."""
    if isinstance(run, SpawnedRun):
        return run.conn
    if isinstance(run, ForkedRun | ServedRun):
        return run.reader.fd
    raise TypeError(f"cannot wait on a {type(run).__name__}")


PIPE_BYTES = 1 << 20  # the pipe a serialised model comes through (Linux's largest without privileges)


def _widen_pipe(run: ScriptProcess) -> None:
    """Let the script's process send the model in 1 MiB steps instead of the default 64 KiB: on a busy
    machine every step waits for both processes to be scheduled, and a 50 MB model takes 800 of them."""
    if not isinstance(run, ForkedRun) or sys.platform != "linux":
        return
    import fcntl

    if hasattr(fcntl, "F_SETPIPE_SZ"):
        try:
            fcntl.fcntl(run.reader.fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:
            pass  # (a smaller limit set by the administrator: the default size works, in more steps)


def _how_read(prepared: Prepared) -> str:
    """How the committed model came to be the one the commit saved (the reply's `model_read`)."""
    if prepared.patch is not None:
        return "changed records in place"  # the keeper's own model, patched: nothing was read in full
    return "changed records" if prepared.rebuilt else "whole file"


def _ms_since(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)


def _write(written: list[Path], path: Path, data: bytes | None = None) -> Path:
    """Note a file written for a commit (removed afterwards unless renamed into place); with `data`, write it."""
    if data is not None:
        path.write_bytes(data)
    written.append(path)
    return path


def _forget(prepared: Prepared | None) -> None:
    if prepared is not None and prepared.path is not None and prepared.path.name == "held.ifc":
        prepared.path.unlink(missing_ok=True)


def _read_capped(path: Path) -> tuple[str, bool]:
    try:
        with path.open("rb") as handle:
            data = handle.read(STDOUT_CAP_BYTES + 1)
    except FileNotFoundError:
        return "", False
    over = len(data) > STDOUT_CAP_BYTES
    return data[:STDOUT_CAP_BYTES].decode("utf-8", errors="replace"), over


def _read_message(run: ScriptProcess, deadline: float) -> dict[str, Any] | None:
    """The script's process's next message (None: it ended, or sent none in time, or not a message)."""
    try:
        message = run.read(deadline)
    except TimeoutError:
        return None
    return message if isinstance(message, dict) else None


def _entity_id(value: Any) -> int | None:
    """An entity id as a hint names it (a number, or its digits), or None."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 10:
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**31 else None


def _read_model(run: ScriptProcess, deadline: float, written: dict[str, Any] | None = None) -> bytes | str:
    """The serialised model the script's process sends on commit/snapshot, or why it could not. `written`:
    the message announcing it, when already read."""
    try:
        if written is None:
            written = run.read(deadline)
        if written is not None and written.get("ok"):
            size = written.get("bytes")
            if written.get("in_file") and isinstance(run, ForkedRun) and isinstance(size, int):
                data = run.read_model(size)  # a forked script's process writes it to a file the keeper gave it
            else:
                data = run.read_frame(deadline)
            if data is not None and len(data) == size:
                return data
            written = None
    except TimeoutError:
        written = None
    return (written or {}).get("error") or "the process writing the model stopped"


def serve(connection: Connection, model_path: Path, save_path: Path, hold_timeout_s: float,
          isolation: str = "fork", expect_signature: tuple[int, ...] | None = None) -> int:
    """Serve the runtime's requests on `connection` until it shuts us down or goes away. A successor keeper
    (`expect_signature`: the saved file as its predecessor wrote it) first checks that the file it opens is
    that one, and refuses to start otherwise (another program changed it: the predecessor, which knows it
    last wrote something else, keeps serving and sees the change)."""
    baseline = None
    opened_signature = file_signature(model_path)
    try:
        if expect_signature is not None:
            baseline = _read_unchanged(model_path, expect_signature)
        model = open_checked(model_path)
        if file_signature(model_path) != opened_signature:
            opened_signature = None  # changed while it was read: no shadow copy is read from it
        if expect_signature is not None and file_signature(model_path) != expect_signature:
            raise StaleFile(f"{model_path} changed on disk while the successor keeper read it")
    except StaleFile as exc:
        connection.send({"ok": False, "stale": True, "error": str(exc)})
        return 2
    except BadModelError as exc:
        connection.send({"ok": False, "error": str(exc)})
        return 2
    if isolation == "fork":
        from ifc_host.child import preimport

        preimport()  # once here, inherited by every forked child
    keeper = Keeper(model, save_path, hold_timeout_s, private_fds=(connection.fileno(),), model_path=model_path,
                    isolation=isolation)
    if expect_signature is not None:
        keeper.disk_signature = keeper.committed_signature = keeper.seen_signature = expect_signature
        keeper.baseline = baseline
    else:
        keeper.committed_signature = opened_signature
        keeper.seen_signature = file_signature(model_path)
    keeper.connection = connection
    keeper.handover = HandoverPolicy()  # the defaults, until the runtime's first execute sends its own
    keeper.rss_at_open = resident_bytes(os.getpid())
    connection.send({"ok": True, "document": describe_document(model, model_path), "pid": os.getpid(),
                     "rss_at_open": keeper.rss_at_open, "ifcopenshell_version": ifcopenshell.version,
                     "isolation": keeper.strategy.name, "sandbox": keeper.sandbox, "keeper": keeper.state()})
    try:
        while True:
            if keeper.queued:
                request = keeper.queued.popleft()
            elif not connection.poll(keeper.seconds_until_hold_expires()):
                keeper.expire_hold()
                keeper.after_reply()
                continue
            else:
                try:
                    request = connection.recv()
                except (EOFError, OSError):
                    return 0
            if request.get("op") == "shutdown":
                return 0
            if request.get("op") == "abort":  # nothing of it runs now; no reply (see the module's doc)
                keeper.note_abort(str(request.get("request_id")))
                continue
            keeper.expire_hold()  # a request that arrives as the hold runs out finds it discarded, as a late one would
            reply = keeper.handle(request)
            if keeper.runtime_gone:
                return 0
            connection.send({**reply, "keeper": keeper.state()})
            keeper.after_reply()
    finally:
        keeper.shutdown()


class StaleFile(Exception):
    """The saved file is not the one the predecessor keeper wrote."""


def _read_unchanged(path: Path, expected: tuple[int, ...]) -> bytes:
    """The DATA section of the file the predecessor wrote (its records are the committed model's own
    serialisation: the next commit's baseline, without serialising the model again); StaleFile if the file
    is not that one."""
    if file_signature(path) != expected:
        raise StaleFile(f"{path} changed on disk since the previous keeper saved it")
    data = path.read_bytes()
    try:
        return data_section(data)
    except NotCanonical as exc:
        raise StaleFile(f"{path} is not as the previous keeper saved it ({exc})") from exc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ifc_host.keeper")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--hold-timeout", type=float, required=True)
    parser.add_argument("--isolation", choices=ISOLATIONS, default=default_isolation())
    parser.add_argument("--expect-signature", help=argparse.SUPPRESS)  # a successor: dev,inode,size,mtime_ns
    parser.add_argument("model_path")
    parser.add_argument("save_path")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the runtime's to handle; it shuts us down
    connection = Connection(args.fd)
    expected = tuple(int(part) for part in args.expect_signature.split(",")) if args.expect_signature else None
    return serve(connection, Path(args.model_path), Path(args.save_path), args.hold_timeout, args.isolation, expected)


def exit_now(status: int) -> None:
    """End the keeper process without the interpreter's teardown: its work is done and its files removed
    (serve's finally), and freeing a big model object by object would keep a stopping host alive for seconds."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


if __name__ == "__main__":
    exit_now(main())
