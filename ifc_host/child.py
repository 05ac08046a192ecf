"""What runs inside the process that executes one script against its own copy of the model.

That process is either forked from the keeper (copy-on-write copy of the committed model) or a warm spare
started with the 'spawn' method that loaded the committed file itself (see isolation.py). Either way it
confines itself (sandbox.py) before the script runs, runs the script, reports, then obeys the keeper: `commit` sends the serialised model and exits, `snapshot`
sends it and waits for more (a held automation), `discard` exits. Whatever the script does, the keeper's
model and the file on disk are untouched, and what it is told about the run (the change report, validation,
IDS check) is worked out in the keeper from the model this process sends (trusted_report.py).
"""
from __future__ import annotations

import ctypes
import faulthandler
import os
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn, Protocol

import ifcopenshell
import ifcopenshell.ifcopenshell_wrapper as wrapper
from ifcopenshell.file import Transaction

from ifc_host import limits as script_limits
from ifc_host import process_tree, sandbox
from ifc_host.changes import ChangeRecorder
from ifc_host.model_diff import HINT_MAX_RECORDS
from ifc_host.pipes import MessageReader, send_frame, send_message
from ifc_host.refs import LoadedRef, ReferenceModels, read_only_error
from ifc_host.script import STDOUT_CAP_BYTES, CappedOutput, ScriptOutcome, run_code

SCRIPT_FILENAME = "<script>"
_PR_SET_PDEATHSIG = 1
_PREIMPORTED_UTILS = (
    "element", "placement", "selector", "unit", "shape_builder", "representation", "pset", "type", "attribute",
    "classification", "date", "schema", "shape", "system", "constraint", "geolocation",
)
# Left for the scripts that use them: they pull networkx and requests (0.2 s of CPU, in every keeper and spare
# otherwise, for the few scripts that schedule or cost). A script imports them from the Python installation, which
# the sandbox lets it read (sandbox.py); what it cannot read (this package, /etc/mime.types) is preimported.
_LEFT_TO_SCRIPTS = frozenset({"cost", "resource", "sequence"})


class TransactionsAreManagedByTheHost(RuntimeError):
    pass


class Channel(Protocol):
    """The child's end of its link to the keeper."""

    def send(self, message: dict[str, Any]) -> None: ...

    def send_frame(self, data: bytes) -> None: ...

    def recv(self) -> dict[str, Any] | None: ...


class PipeChannel:
    """Two raw pipes (a forked child)."""

    def __init__(self, to_keeper: int, from_keeper: int, model_file: int | None = None) -> None:
        self.to_keeper = to_keeper
        self.reader = MessageReader(from_keeper)
        self.model_file = model_file  # the keeper's anonymous file for the committed model (isolation._model_file)

    def send(self, message: dict[str, Any]) -> None:
        send_message(self.to_keeper, message)

    def send_frame(self, data: bytes) -> None:
        send_frame(self.to_keeper, data)

    def recv(self) -> dict[str, Any] | None:
        return self.reader.read(None)

    def write_model(self, data: bytes) -> bool:
        """Put the serialised model in the keeper's model file (ForkedRun.read_model); False when there is none,
        or it is bigger than this process may write to one file (RLIMIT_FSIZE: writing past it ends the process),
        or the write fails: then it goes over the pipe."""
        if self.model_file is None or len(data) > _file_size_limit():
            return False
        view, done = memoryview(data), 0
        try:
            while done < len(data):
                done += os.pwrite(self.model_file, view[done:], done)
        except OSError:
            return False
        return True


def _file_size_limit() -> float:
    try:
        import resource
    except ImportError:
        return float("inf")
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return float("inf") if soft == resource.RLIM_INFINITY else soft


def send_model(channel: Channel, data: bytes) -> None:
    """The serialised model to the keeper: in its model file where there is one (a forked child), else as a
    frame after the message that announces it."""
    if isinstance(channel, PipeChannel) and channel.write_model(data):
        channel.send({"kind": "written", "ok": True, "bytes": len(data), "in_file": True})
        return
    channel.send({"kind": "written", "ok": True, "bytes": len(data)})
    channel.send_frame(data)


def child_main(model: ifcopenshell.file, scratch: Path, fds: dict[str, int], refs: list[LoadedRef]) -> NoReturn:
    """Entry point right after fork(), ahead of the script: confine, say ready, wait for the job, run it.
    Never returns (os._exit keeps the keeper's cleanup from running here)."""
    code = 70
    try:
        limits = script_limits.from_environment()  # before the environment is scrubbed
        tree = process_tree.enter_own_tree(scratch, list(fds.values()))  # from here on: the script's process
        reset_signals()
        capture_output(fds["stdout"], fds["crash"])
        report = sandbox.apply(scratch, tree, limits)
        channel = PipeChannel(fds["to_keeper"], fds["from_keeper"], fds.get("model_out"))
        channel.send({"kind": "ready", "sandbox": report.as_dict(), "pid": tree.pid})
        job = channel.recv()
        if job is not None:
            serve_job(model, job, channel, fds["epilogue"], tree, limits, refs)
        code = 0
    except BaseException:  # noqa: B036 - nothing may escape a forked child
        code = 70
    finally:
        os._exit(code)


def serve_job(model: ifcopenshell.file, job: dict[str, Any], channel: Channel, epilogue_fd: int,
              tree: process_tree.Tree, limits: script_limits.ScriptLimits, refs: list[LoadedRef] | None = None) -> None:
    """Run the job, report its result, then obey the keeper until it says commit or discard. Whatever the
    script started is killed before its result is reported. `refs`: the session's reference models (refs.py)."""
    process_tree.write_note(tree, script_limits.apply_cpu(limits, float(job.get("timeout_s") or 0)))
    result, recorder = run_job(model, job, epilogue_fd, refs or [])
    process_tree.end_descendants(tree)
    result = script_limits.explain(result, limits)
    channel.send({"kind": "result", "result": result})
    _obey_keeper(model, channel, recorder if result.get("ok") else None)


def reset_signals() -> None:
    for signum in (signal.SIGTERM, signal.SIGINT, getattr(signal, "SIGCHLD", None)):
        if signum is not None:
            signal.signal(signum, signal.SIG_DFL)


def capture_output(stdout_fd: int, crash_fd: int) -> None:
    faulthandler.enable(file=os.fdopen(os.dup(crash_fd), "w"), all_threads=False)
    os.dup2(stdout_fd, 1)
    os.dup2(stdout_fd, 2)


def die_with_the_keeper() -> None:
    """A script must not outlive the keeper that would kill it at its deadline (Linux: PR_SET_PDEATHSIG)."""
    keeper = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError, TypeError):
        return
    if os.getppid() != keeper:  # the keeper died before the call took effect
        os._exit(70)


def preimport() -> None:
    """Import the API and utilities once, so no script pays for it."""
    import importlib
    import mimetypes
    import pkgutil

    import ifcopenshell.api
    import ifcopenshell.util

    mimetypes.init()  # read /etc/mime.types now: the sandbox denies it, and the IDS check (xmlschema) needs it

    for module in pkgutil.iter_modules(ifcopenshell.api.__path__):
        if module.ispkg and module.name not in _LEFT_TO_SCRIPTS:
            try:
                importlib.import_module(f"ifcopenshell.api.{module.name}")
            except Exception:  # an optional API module missing its own dependency stays lazy
                pass
    for name in _PREIMPORTED_UTILS:
        try:
            importlib.import_module(f"ifcopenshell.util.{name}")
        except Exception:  # noqa: S110
            pass
    try:  # clash detection in scripts (refs.clash): the sandbox cannot read this package's files later
        importlib.import_module("ifc_host.clash")
        importlib.import_module("ifcclash.ifcclash")
    except Exception:  # noqa: S110 - ifcclash missing: refs.clash says so when called
        pass


def run_job(model: ifcopenshell.file, job: dict[str, Any], epilogue_fd: int, loaded: list[LoadedRef],
             ) -> tuple[dict[str, Any], ChangeRecorder]:
    stdout = CappedOutput(1, STDOUT_CAP_BYTES)
    sys.stdout = sys.stderr = stdout
    _forbid_script_transactions()
    _protect_host_files([*(job.get("protected_paths") or []), *(r.spec.path for r in loaded)])
    refs = ReferenceModels(loaded, model, job.get("model_name") or "model")
    recorder = ChangeRecorder(model)
    model.transaction = recorder
    try:
        outcome = run_code(job["code"], SCRIPT_FILENAME, _script_globals(model, refs))
    finally:
        stdout.flush()
        model.transaction = None
    violations = refs.violations()
    refs.release()
    if violations and outcome.ok:  # a change that got past the guards: the script fails all the same
        outcome = ScriptOutcome(False, read_only_error(violations))
    result: dict[str, Any] = {
        "ok": outcome.ok, "error": outcome.error, "stdout_truncated": stdout.truncated, "failures": [],
        "changes": {"added": [], "modified": [], "deleted": []}, "epilogue_stdout": None,
    }
    if not outcome.ok:
        return result, recorder
    if job["mode"] == "collect":
        if recorder.touched_anything:
            counts = recorder.counts
            result["failures"].append({"severity": "warning", "message": (
                "this data-collection script changed the model (created {created}, edited {edited}, deleted "
                "{deleted} entities); everything was rolled back as always for data collection").format(**counts)})
        return result, recorder
    # What the recorder saw: the keeper compares it with the model this process writes, which decides (the
    # script may have switched the recorder off); the report, validation and IDS check run there too.
    result["changes"] = recorder.finish().as_contract()
    return result, recorder


_SPF_TEXT = wrapper.entity_instance.to_string  # (entity, True): the record as the file writer writes it


def change_hint(model: ifcopenshell.file, recorder: ChangeRecorder | None) -> dict[str, Any]:
    """The records the recorder says the run changed, as they will be written, and the entities it deleted:
    sent before the model, so the keeper can work the commit out while the model is serialised. Only a
    guess (trusted_report.ReportAhead): `records` None when there is none to make."""
    none: dict[str, Any] = {"kind": "hint", "records": None, "deleted": []}
    if recorder is None:
        return none
    try:  # (the script had the recorder in its hands: whatever it left there, the model is still sent)
        alive, deleted = recorder.records_touched()
        if len(alive) + len(deleted) > HINT_MAX_RECORDS:
            return none
        records = {str(entity_id): _SPF_TEXT(model.by_id(entity_id), True) + ";" for entity_id in alive}
        return {"kind": "hint", "records": records, "deleted": sorted(deleted)}
    except Exception:  # noqa: BLE001
        return none


def _script_globals(model: ifcopenshell.file, refs: ReferenceModels) -> dict[str, Any]:
    return {"__name__": "__main__", "__builtins__": __builtins__, "model": model, "refs": refs,
            "ifcopenshell": ifcopenshell}


def _forbid_script_transactions() -> None:
    """Scripts run inside one host transaction. IfcOpenShell's own transactions nest on the recorder (a few
    API functions use one to discard temporary entities); undo/redo would reach outside the script."""
    file_class = ifcopenshell.file

    def begin_transaction(self: Any) -> None:
        recorder = self.transaction
        if isinstance(recorder, ChangeRecorder):
            recorder.nested.append(Transaction(self))
        else:
            raise TransactionsAreManagedByTheHost("transactions are managed by the host")

    def end_transaction(self: Any) -> None:
        recorder = self.transaction
        if isinstance(recorder, ChangeRecorder) and recorder.nested:
            recorder.nested.pop()

    def discard_transaction(self: Any) -> None:
        recorder = self.transaction
        if isinstance(recorder, ChangeRecorder) and recorder.nested:
            recorder.nested.pop().rollback()

    def refuse(self: Any) -> None:
        raise TransactionsAreManagedByTheHost(
            "undo/redo is not available: the whole script is one transaction that the host commits when the "
            "script succeeds; raise an exception to roll everything back")

    file_class.begin_transaction = begin_transaction
    file_class.end_transaction = end_transaction
    file_class.discard_transaction = discard_transaction
    file_class.undo = refuse
    file_class.redo = refuse


def _protect_host_files(paths: list[str]) -> None:
    """Saving is the host's job (atomically, and only on success): a script may not write over the model."""
    protected = {os.path.realpath(p) for p in paths}
    original_write = ifcopenshell.file.write

    def write(self: Any, path: Any, *args: Any, **kwargs: Any) -> Any:
        if os.path.realpath(os.fspath(path)) in protected:
            raise PermissionError(f"{path} is the host's model file: the host saves it when the script succeeds")
        return original_write(self, path, *args, **kwargs)

    ifcopenshell.file.write = write


def _obey_keeper(model: ifcopenshell.file, channel: Channel, recorder: ChangeRecorder | None = None) -> None:
    while True:
        command = channel.recv()
        if command is None or command.get("op") == "discard":
            return
        if command.get("op") in ("commit", "snapshot"):
            if command["op"] == "commit":
                channel.send(change_hint(model, recorder))  # the keeper works the commit out on it meanwhile
            try:
                data = model.to_string().encode("utf-8")
            except Exception as exc:
                channel.send({"kind": "written", "ok": False, "error": f"{type(exc).__name__}: {exc}"})
            else:
                send_model(channel, data)
            if command["op"] == "commit":
                return
