"""The warm spare of the 'spawn' isolation: a fresh interpreter that loads the committed model, confines
itself, says it is ready, then runs exactly one script (see isolation.SpawnStrategy and child.serve_job)."""
from __future__ import annotations

import os
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ifc_host import limits as script_limits
from ifc_host import process_tree
from ifc_host.child import capture_output, die_with_the_keeper, preimport, reset_signals, serve_job
from ifc_host.model_file import BadModelError, open_checked
from ifc_host.refs import ReferenceProblem, RefSpec, open_reference
from ifc_host.sandbox import apply


class ConnectionChannel:
    """The spare's end of its multiprocessing Connection to the keeper."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def send(self, message: dict[str, Any]) -> None:
        self.conn.send(message)

    def send_frame(self, data: bytes) -> None:
        self.conn.send_bytes(data)

    def recv(self) -> dict[str, Any] | None:
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            return None


def spare_main(conn: Connection, model_path: str, scratch: str, files: dict[str, str],
               refs: list[tuple[str, str]] | None = None) -> None:
    code = 70
    try:
        die_with_the_keeper()  # while loading, too
        reset_signals()
        fds = {name: os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600) for name, path in files.items()}
        preimport()
        try:
            model = open_checked(model_path)
            loaded = [open_reference(RefSpec(name, path)) for name, path in refs or []]
        except (BadModelError, ReferenceProblem) as exc:
            conn.send({"kind": "failed", "error": str(exc)})
            return
        limits = script_limits.from_environment()  # before the environment is scrubbed
        tree = process_tree.enter_own_tree(Path(scratch), [conn.fileno(), *fds.values()])  # the script's process
        report = apply(Path(scratch), tree, limits)
        channel = ConnectionChannel(conn)
        channel.send({"kind": "ready", "sandbox": report.as_dict(), "pid": tree.pid})
        job = channel.recv()
        if job is None:
            code = 0
            return
        capture_output(fds["stdout"], fds["crash"])
        serve_job(model, job, channel, fds["epilogue"], tree, limits, loaded)
        code = 0
    except BaseException:  # noqa: B036 - the keeper reads a dead spare as a crash of the script
        code = 70
    finally:
        os._exit(code)
