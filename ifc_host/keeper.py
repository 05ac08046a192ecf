"""The model keeper: a single-threaded process holding the committed model, forking a child per script.

Started fresh (`python -m ifc_host.keeper`, never forked from the multi-threaded runtime), so forking it is
safe. A script's failure, hang or native crash only ever ends its own child: rolling back costs a fork and
a kill, whatever the model's size. A successful automation's child writes the model next to the saved file;
the keeper re-opens that (checked), renames it over the saved file and adopts it as the committed model.

Requests arrive as dicts on a multiprocessing Connection (one at a time) and each gets one reply.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import ifcopenshell

from ifc_host.model_file import (
    BadModelError,
    describe_context,
    describe_document,
    open_checked,
    replace_atomically,
    temp_path_beside,
)
from ifc_host.pipes import MessageReader, send_message
from ifc_host.script import STDOUT_CAP_BYTES

COMMIT_TIMEOUT_S = 600.0
SNAPSHOT_TIMEOUT_S = 300.0
_CRASH_FRAME = re.compile(r'File "<script>", line (\d+)')
_PREIMPORTED_UTILS = (
    "element", "placement", "selector", "unit", "shape_builder", "representation", "pset", "type", "attribute",
    "classification", "date", "schema", "shape", "system", "cost", "constraint", "geolocation", "resource",
)


@dataclass
class ChildRun:
    """One forked script child and the files and pipes that connect it to the keeper."""

    pid: int
    request_id: str
    mode: str
    started: float
    reader: MessageReader
    to_child: int
    files: dict[str, Path]
    exit_status: int | None = None
    result: dict[str, Any] = field(default_factory=dict)

    def send(self, message: dict[str, Any]) -> None:
        send_message(self.to_child, message)

    def kill(self) -> None:
        if self.exit_status is not None:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        except PermissionError:
            os.kill(self.pid, signal.SIGKILL)
        self.reap()

    def reap(self) -> int:
        if self.exit_status is None:
            _, status = os.waitpid(self.pid, 0)
            self.exit_status = status
            try:
                os.killpg(self.pid, signal.SIGKILL)  # anything the script started in its process group
            except (ProcessLookupError, PermissionError):
                pass
        return self.exit_status

    def close(self) -> None:
        self.kill()
        for fd in (self.reader.fd, self.to_child):
            try:
                os.close(fd)
            except OSError:
                pass
        for path in self.files.values():
            path.unlink(missing_ok=True)


@dataclass
class HeldAutomation:
    run: ChildRun
    result: dict[str, Any]
    expires: float


class Keeper:
    def __init__(self, model: ifcopenshell.file, save_path: Path, hold_timeout_s: float,
                 private_fds: tuple[int, ...] = (), model_path: Path | None = None) -> None:
        self.model = model
        self.protected_paths = sorted({str(save_path), str(model_path or save_path)})
        self.private_fds = private_fds  # the keeper's own channel to the runtime: never left open in a child
        self.save_path = save_path
        self.hold_timeout_s = hold_timeout_s
        self.held: HeldAutomation | None = None
        self.expired: dict[str, str] = {}
        self.workdir = Path(tempfile.mkdtemp(prefix="nexus-keeper-"))

    # --- requests -----------------------------------------------------------------------------------
    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "execute":
            return self.execute(request)
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
        return {"ok": False, "message": f"unknown keeper request {op!r}"}

    def execute(self, job: dict[str, Any]) -> dict[str, Any]:
        if self.held is not None:
            return _failure(job, "Busy", f"automation {self.held.run.request_id} awaits a keep/discard decision")
        run = self._fork({**job, "protected_paths": self.protected_paths})
        try:
            message = run.reader.read(run.started + float(job["timeout_s"]))
        except TimeoutError:
            run.kill()
            outcome = self._collect_output(run, {"ok": False, "timed_out": True, "error": {
                "type": "Timeout", "line": None, "traceback": "",
                "message": f"the script ran longer than its {float(job['timeout_s']):g} s limit and was stopped; "
                           "the model is unchanged"}})
            run.close()
            return self._finish(run, outcome, committed=False)
        if message is None:
            return self._crashed(run)
        result = self._collect_output(run, message["result"])
        if not result["ok"] or job["mode"] == "collect":
            run.close()
            return self._finish(run, result, committed=False)
        if job.get("hold"):
            self.held = HeldAutomation(run, result, time.monotonic() + self.hold_timeout_s)
            return {**result, "committed": False, "held": True, "duration_ms": _ms_since(run.started)}
        return self._commit(run, result)

    def reload(self, path: Path) -> dict[str, Any]:
        """Adopt the file on disk (edited by another program) as the committed model."""
        if self.held is not None:
            return {"ok": False, "error": "an automation awaits a decision"}
        try:
            self.model = open_checked(path)
        except BadModelError as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True}

    def decide(self, request_id: str, decision: str) -> dict[str, Any]:
        held = self.held
        if held is None or held.run.request_id != request_id:
            why = self.expired.get(request_id) or "no automation with this request id awaits a decision"
            return {"unknown": True, "message": f"cannot apply '{decision}' to request {request_id}: {why}"}
        self.held = None
        if decision == "keep":
            return {**self._commit(held.run, held.result), "held": False}
        held.run.close()
        return {**self._finish(held.run, held.result, committed=False), "held": False}

    def snapshot_held(self, path: Path) -> dict[str, Any]:
        if self.held is None:
            return {"ok": False, "message": "no automation is held"}
        run = self.held.run
        run.send({"op": "snapshot", "path": str(path)})
        try:
            message = run.reader.read(time.monotonic() + SNAPSHOT_TIMEOUT_S)
        except TimeoutError:
            message = None
        if message is None or not message.get("ok"):
            return {"ok": False, "message": (message or {}).get("error") or "the held model could not be written"}
        return {"ok": True}

    def expire_hold(self) -> None:
        if self.held is not None and time.monotonic() >= self.held.expires:
            request_id = self.held.run.request_id
            self.held.run.close()
            self.held = None
            self.expired[request_id] = (f"no decision arrived within {self.hold_timeout_s:g} s, so the "
                                        "automation was discarded")

    def seconds_until_hold_expires(self) -> float | None:
        return None if self.held is None else max(0.0, self.held.expires - time.monotonic())

    def shutdown(self) -> None:
        if self.held is not None:
            self.held.run.close()
            self.held = None
        shutil.rmtree(self.workdir, ignore_errors=True)

    # --- children -------------------------------------------------------------------------------------
    def _fork(self, job: dict[str, Any]) -> ChildRun:
        files = {name: self.workdir / f"{name}-{time.monotonic_ns()}.txt" for name in ("stdout", "epilogue", "crash")}
        file_fds = {name: os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600) for name, path in files.items()}
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            from ifc_host.child import child_main

            for fd in (to_child_w, from_child_r, *self.private_fds):
                os.close(fd)
            child_main(self.model, job, {**file_fds, "to_keeper": from_child_w, "from_keeper": to_child_r})
        try:
            os.setpgid(pid, pid)  # also done by the child; whichever runs first wins the race harmlessly
        except (PermissionError, ProcessLookupError):
            pass
        os.close(to_child_r)
        os.close(from_child_w)
        for fd in file_fds.values():
            os.close(fd)
        return ChildRun(pid, job["request_id"], job["mode"], started, MessageReader(from_child_r), to_child_w, files)

    def _collect_output(self, run: ChildRun, result: dict[str, Any]) -> dict[str, Any]:
        stdout, over_cap = _read_capped(run.files["stdout"])
        out = {"failures": [], "changes": {"added": [], "modified": [], "deleted": []}, **result, "stdout": stdout}
        out["stdout_truncated"] = bool(result.get("stdout_truncated")) or over_cap
        if result.get("ok") and run.mode == "automate" and out.get("epilogue_stdout") is None:
            epilogue, _ = _read_capped(run.files["epilogue"])
            out["epilogue_stdout"] = epilogue or None
        return out

    def _crashed(self, run: ChildRun) -> dict[str, Any]:
        status = run.reap()
        if os.WIFSIGNALED(status):
            signame = signal.Signals(os.WTERMSIG(status)).name
            how = f"the script crashed the process running it ({signame})"
        else:
            how = f"the script ended the process running it (exit status {os.WEXITSTATUS(status)})"
        crash_log, _ = _read_capped(run.files["crash"])
        frames = _CRASH_FRAME.findall(crash_log)
        error = {"type": "HostCrash", "message": f"{how}; the model is unchanged and the host keeps running",
                 "line": int(frames[0]) if frames else None,
                 "traceback": "\n".join(line.strip() for line in crash_log.splitlines() if '"<script>"' in line)}
        result = self._collect_output(run, {"ok": False, "error": error})
        run.close()
        return self._finish(run, result, committed=False)

    def _commit(self, run: ChildRun, result: dict[str, Any]) -> dict[str, Any]:
        temp = temp_path_beside(self.save_path)
        try:
            run.send({"op": "commit", "path": str(temp)})
            try:
                written = run.reader.read(time.monotonic() + COMMIT_TIMEOUT_S)
            except TimeoutError:
                written = None
            run.close()
            if written is None or not written.get("ok"):
                detail = (written or {}).get("error") or "the process writing the model stopped"
                return self._commit_failed(run, result, f"the model could not be written: {detail}")
            try:
                adopted = open_checked(temp)
            except BadModelError as exc:
                return self._commit_failed(run, result, f"the written model did not read back: {exc}")
            replace_atomically(temp, self.save_path)
        except OSError as exc:
            return self._commit_failed(run, result, f"saving to {self.save_path} failed: {exc}")
        finally:
            temp.unlink(missing_ok=True)
        self.model = adopted
        return self._finish(run, result, committed=True)

    def _commit_failed(self, run: ChildRun, result: dict[str, Any], message: str) -> dict[str, Any]:
        failed = {**result, "ok": False, "error": {"type": "CommitFailed", "message": message + "; the model is unchanged",
                                                   "line": None, "traceback": ""}}
        return self._finish(run, failed, committed=False)

    def _finish(self, run: ChildRun, result: dict[str, Any], committed: bool) -> dict[str, Any]:
        return {**result, "committed": committed, "duration_ms": _ms_since(run.started)}


def _failure(job: dict[str, Any], kind: str, message: str) -> dict[str, Any]:
    return {"ok": False, "committed": False, "stdout": "", "failures": [],
            "changes": {"added": [], "modified": [], "deleted": []}, "duration_ms": 0,
            "error": {"type": kind, "message": message, "line": None, "traceback": ""}}


def _ms_since(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 3)


def _read_capped(path: Path) -> tuple[str, bool]:
    try:
        with path.open("rb") as handle:
            data = handle.read(STDOUT_CAP_BYTES + 1)
    except FileNotFoundError:
        return "", False
    over = len(data) > STDOUT_CAP_BYTES
    return data[:STDOUT_CAP_BYTES].decode("utf-8", errors="replace"), over


def _preimport() -> None:
    """Import the API and utilities once here, so no script pays for it after each fork."""
    import importlib
    import pkgutil

    import ifcopenshell.api
    import ifcopenshell.util

    for module in pkgutil.iter_modules(ifcopenshell.api.__path__):
        if module.ispkg:
            try:
                importlib.import_module(f"ifcopenshell.api.{module.name}")
            except Exception:  # an optional API module missing its own dependency stays lazy
                pass
    for name in _PREIMPORTED_UTILS:
        try:
            importlib.import_module(f"ifcopenshell.util.{name}")
        except Exception:  # noqa: S110
            pass
    importlib.import_module("ifc_host.child")


def serve(connection: Connection, model_path: Path, save_path: Path, hold_timeout_s: float) -> int:
    try:
        model = open_checked(model_path)
    except BadModelError as exc:
        connection.send({"ok": False, "error": str(exc)})
        return 2
    _preimport()
    keeper = Keeper(model, save_path, hold_timeout_s, private_fds=(connection.fileno(),), model_path=model_path)
    connection.send({"ok": True, "document": describe_document(model, model_path), "pid": os.getpid()})
    try:
        while True:
            if not connection.poll(keeper.seconds_until_hold_expires()):
                keeper.expire_hold()
                continue
            try:
                request = connection.recv()
            except (EOFError, OSError):
                return 0
            if request.get("op") == "shutdown":
                return 0
            connection.send(keeper.handle(request))
    finally:
        keeper.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ifc_host.keeper")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--hold-timeout", type=float, required=True)
    parser.add_argument("model_path")
    parser.add_argument("save_path")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the runtime's to handle; it shuts us down
    connection = Connection(args.fd)
    return serve(connection, Path(args.model_path), Path(args.save_path), args.hold_timeout)


if __name__ == "__main__":
    sys.exit(main())
