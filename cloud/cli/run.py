"""`nexus run "PROMPT" --ifc MODEL.ifc`: one headless run, streamed to the terminal.

The loop runs in this process, called directly (no HTTP to a server of its own, no SSE). The IFC host is
a child process that connects to this process's host websocket on 127.0.0.1, so the scripts it runs never
share the orchestrator's process (its memory, its keys, its database handle).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from cloud.cli.common import fail, open_store, with_db
from cloud.cli.printer import Printer
from cloud.cli.protocol_stdout import protocol_stdout
from ifc_host.launcher import add_isolation_argument

CLI_USER = "cli"


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

    problem = output_problem(args.ifc, args.out, args.in_place)
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

    from cloud.child_host import HostStartFailed
    from cloud.embedded import EmbeddedCore
    from cloud.ids_document import read_ids_file
    from cloud.vendors.base import ModelError
    from cloud.vendors.registry import allow_on_command_line, create_model
    from ifc_host.ids_check import IdsProblem
    from ifc_host.model_file import BadModelError, open_checked

    try:
        allow_on_command_line(spec)  # the person's own machine: an openai-compat URL typed here (never gets the key)
        model = create_model(spec)
        open_checked(args.ifc)
        ids = read_ids_file(args.ids) if args.ids else None
    except (ModelSpecError, ModelError, BadModelError, IdsProblem) as exc:
        return fail(str(exc))
    # Without --out or --in-place, MODEL is never modified: commits go to a scratch copy, kept if any.
    scratch = None if args.out or args.in_place else Path(tempfile.mkdtemp(prefix="nexus-run-"))
    save_to = str(scratch / Path(args.ifc).name) if scratch else args.out
    try:
        core = EmbeddedCore(open_store(args), args.ifc, save_to, user=CLI_USER, isolation=args.isolation)
    except HostStartFailed as exc:
        _drop_empty_scratch(scratch)
        return fail(str(exc))
    try:
        printer, outcome = Printer(out), None
        session = core.new_session(spec)
        if ids:
            core.store.update_session(session["id"], ids=ids)
            session["ids"] = ids
        for chunk in core.run(session, model, args.prompt):
            data = chunk.to_json()
            if args.json:
                print(json.dumps(data), file=out, flush=True)
            else:
                printer.show(data)
            if chunk.type in ("Complete", "Error"):
                outcome = chunk.type
        return 0 if outcome == "Complete" else 1
    finally:
        core.close()
        _report_scratch(scratch, args.ifc)


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

