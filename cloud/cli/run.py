"""`nexus run "PROMPT" --ifc MODEL.ifc`: one headless run, streamed to the terminal.

The loop runs in this process, called directly (no HTTP to a server of its own, no SSE). The IFC host is
a child process that connects to this process's host websocket on 127.0.0.1, so the scripts it runs never
share the orchestrator's process (its memory, its keys, its database handle).

Ctrl-C: the first cancels the run, so the host aborts its script (killed, rolled back, a held change
discarded), and the command exits with status 130 within EXIT_WITHIN_S; a second one, or a run that has not
ended by then, interrupts at once. Either way the host process, its keeper and their scripts are stopped.
"""
from __future__ import annotations

import _thread
import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType, TracebackType
from typing import TextIO

from cloud.cli.common import fail, open_store, with_db
from cloud.cli.printer import Printer
from cloud.cli.protocol_stdout import protocol_stdout
from cloud.cli.run_bcf import BcfIn, add_bcf_arguments, attach_bcf_in, bcf_problem, read_bcf_in, write_bcf_out
from ifc_host.launcher import add_isolation_argument

CLI_USER = "cli"
EXIT_INTERRUPTED = 130
CANCEL_GRACE_S = 1.0  # after the first Ctrl-C, how long the run gets to end on its own before it is cut short
HOST_STOP_ON_INTERRUPT_S = 0.6  # then the host process gets this long to stop on its own before it is killed


class CtrlC:
    """While active, the first SIGINT sets `cancel` (the run aborts its host work and ends); a second, or
    CANCEL_GRACE_S without the run ending, raises KeyboardInterrupt in the main thread."""

    def __init__(self) -> None:
        self.cancel = threading.Event()
        self._previous: object = None
        self._timer: threading.Timer | None = None

    def __enter__(self) -> CtrlC:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self.cancel.is_set():
            raise KeyboardInterrupt
        self.cancel.set()
        print("nexus: cancelling the run (press Ctrl-C again to stop at once)", file=sys.stderr, flush=True)
        self._timer = threading.Timer(CANCEL_GRACE_S, _thread.interrupt_main)
        self._timer.daemon = True
        self._timer.start()


def register(sub: argparse._SubParsersAction) -> None:
    p = with_db(sub.add_parser("run", help="one headless run on an IFC model"))
    p.add_argument("prompt")
    p.add_argument("--ifc", required=True, help="the IFC model to work on")
    p.add_argument("--model", help="model spec, e.g. anthropic:claude-sonnet-4-5 or scripted:PATH")
    p.add_argument("--json", action="store_true", help="print one stream chunk per line, as JSON")
    p.add_argument("--out", help="save committed changes here; MODEL is never modified")
    p.add_argument("--in-place", action="store_true", help="save committed changes back to MODEL (atomically); "
                   "without --out or --in-place they are kept in a scratch copy whose path is printed")
    p.add_argument("--ids", metavar="FILE", help="an IDS file (buildingSMART Information Delivery Specification): "
                   "its requirements an automation makes fail are reported like schema findings")
    p.add_argument("--ref", action="append", default=[], metavar="OTHER.ifc",
                   help="a reference model, read-only (repeatable): scripts see it as refs['OTHER.ifc']")
    add_bcf_arguments(p)
    add_isolation_argument(p)
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    with protocol_stdout() as out:  # before any thread starts: see cloud.cli.protocol_stdout
        return _run(args, out)


def output_problem(ifc: str, out: str | None, in_place: bool) -> str | None:
    """Why --out / --in-place cannot be used as given, or None."""
    if in_place and out:
        return "pass either --out FILE or --in-place, not both"
    if out and (Path(out).resolve() == Path(ifc).resolve() or (Path(out).exists() and os.path.samefile(out, ifc))):
        return f"--out {out} is the input model itself: pass --in-place to overwrite it, or another --out path"
    return None


def _run(args: argparse.Namespace, out: TextIO) -> int:
    from cloud.vendors.registry import ModelSpecError, default_model_spec, missing_key

    problem = output_problem(args.ifc, args.out, args.in_place) or bcf_problem(args)
    if problem:
        return fail(problem)
    # The model first, before anything slow is imported or started: a missing key is said at once.
    spec = args.model or default_model_spec()
    if not spec:
        return fail("no model: set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY, or pass --model")
    try:
        no_key = missing_key(spec)  # in our words, not the SDK's, and before the host starts
    except ModelSpecError as exc:
        return fail(str(exc))
    if no_key:
        return fail(no_key)

    if not Path(args.ifc).is_file():
        return fail(f"{args.ifc}: no such file")  # as the host would say, before anything is started
    from cloud.child_host import HostStartFailed
    from cloud.embedded import EmbeddedCore
    from cloud.session_refs import RefsProblem, local_refs, save_refs
    from cloud.vendors.base import ModelError
    from cloud.vendors.registry import allow_on_command_line, create_model

    try:
        allow_on_command_line(spec)  # the person's own machine: an openai-compat URL typed here (never gets the key)
        model = create_model(spec)
        ids = _read_ids(args.ids)
        refs = local_refs(args.ref, args.ifc)
        _open_refs(refs)
        bcf_in = _read_bcf_in(args)
    except (ModelSpecError, ModelError, _Refused, RefsProblem) as exc:
        return fail(str(exc))
    # Without --out or --in-place, MODEL is never modified: commits go to a scratch copy, kept if any.
    scratch = None if args.out or args.in_place else Path(tempfile.mkdtemp(prefix="nexus-run-"))
    save_to = str(scratch / Path(args.ifc).name) if scratch else args.out
    try:  # the host reads MODEL: one it cannot open ends the start with the host's reason
        core = EmbeddedCore(open_store(args), args.ifc, save_to, user=CLI_USER, isolation=args.isolation)
    except HostStartFailed as exc:
        _drop_empty_scratch(scratch)
        return fail(exc.reason or str(exc))
    interrupted = False
    try:
        printer, outcome = Printer(out), None
        session = core.new_session(spec)
        if ids:
            core.store.sessions.update_session(session["id"], ids=ids)
            session["ids"] = ids
        if refs:
            save_refs(core.store, session["id"], refs)
            session["refs"] = core.store.sessions.get_session(session["id"])["refs"]
        prompt = attach_bcf_in(core.store, session["id"], bcf_in, args.prompt)
        with CtrlC() as ctrl_c:
            for chunk in core.run(session, model, prompt, ctrl_c.cancel):
                data = chunk.to_json()
                if args.json:
                    print(json.dumps(data), file=out, flush=True)
                else:
                    printer.show(data)
                if chunk.type in ("Complete", "Error"):
                    outcome = chunk.type
        interrupted = ctrl_c.cancel.is_set()
        if not interrupted:
            write_bcf_out(core.store, session["id"], args, save_to or args.ifc,
                          bcf_in)
        return EXIT_INTERRUPTED if interrupted else 0 if outcome == "Complete" else 1
    except KeyboardInterrupt:
        interrupted = True
        return EXIT_INTERRUPTED
    finally:
        if interrupted:
            _stop_host_quickly(core)
        core.close()
        _report_scratch(scratch, args.ifc)
        if interrupted:
            _exit_at_once(EXIT_INTERRUPTED, out)


class _Refused(ValueError):
    """A file named on the command line cannot be used; the message says which and why."""


def _read_ids(path: str | None) -> str | None:
    """--ids FILE, checked (IfcOpenShell's IDS reader is imported only for one)."""
    if path is None:
        return None
    from cloud.ids_document import read_ids_file
    from ifc_host.ids_reader import IdsProblem

    try:
        return read_ids_file(path)
    except IdsProblem as exc:
        raise _Refused(str(exc)) from None


def _read_bcf_in(args: argparse.Namespace) -> BcfIn | None:
    """--bcf-in ARCHIVE, read (bcf-client, with IfcOpenShell and numpy, is imported only for one)."""
    if not args.bcf_in:
        return None
    from cloud.bcf.archive import BcfProblem

    try:
        return read_bcf_in(args)
    except BcfProblem as exc:
        raise _Refused(str(exc)) from None


def _open_refs(refs: list[dict[str, str]]) -> None:
    """Each --ref model opened once here, so a damaged one is refused before the run starts (the host opens the
    references at the first script, not when it starts)."""
    if not refs:
        return
    from ifc_host.model_file import BadModelError, open_checked

    for ref in refs:
        try:
            open_checked(ref["path"])
        except BadModelError as exc:
            raise _Refused(str(exc)) from None


def _stop_host_quickly(core: object) -> None:
    """Ctrl-C: the host's script is already aborted; give its process a moment to stop on its own, then kill
    it. Its keeper notices its connection close and ends with its script processes."""
    from ifc_host.launcher import HostProcess

    host = getattr(core, "host", None)
    if isinstance(host, HostProcess):
        host.stop(timeout_s=HOST_STOP_ON_INTERRUPT_S)


def _exit_at_once(status: int, out: TextIO) -> None:
    """End the process now. Everything the command started is stopped by then (core.close); the
    interpreter's own teardown (freeing every imported SDK, an API index still building on a daemon thread)
    can take seconds that a person who pressed Ctrl-C should not wait for."""
    if threading.current_thread() is not threading.main_thread():
        return
    for stream in (out, sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def _drop_empty_scratch(scratch: Path | None) -> None:
    if scratch is not None and not any(scratch.iterdir()):
        shutil.rmtree(scratch, ignore_errors=True)


def _report_scratch(scratch: Path | None, ifc: str) -> None:
    """Changes committed without --out or --in-place are not lost: say where they are."""
    if scratch is None:
        return
    saved = scratch / Path(ifc).name
    if saved.exists():
        print(f"nexus: {ifc} is unchanged; the committed changes are in {saved} (pass --out FILE to choose "
              "where, or --in-place to overwrite the input)", file=sys.stderr, flush=True)
    else:
        shutil.rmtree(scratch, ignore_errors=True)

