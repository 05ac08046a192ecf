"""`nexus run "PROMPT" --ifc MODEL.ifc`: one headless run, streamed to the terminal.

The loop runs in this process, called directly (no HTTP to a server of its own, no SSE). The IFC host is
a child process that connects to this process's host websocket on 127.0.0.1, so the scripts it runs never
share the orchestrator's process (its memory, its keys, its database handle).
"""
from __future__ import annotations

import argparse
import json

from cloud.cli.common import fail, open_store, with_db
from cloud.cli.printer import Printer
from ifc_host.launcher import add_isolation_argument

CLI_USER = "cli"


def register(sub: argparse._SubParsersAction) -> None:
    p = with_db(sub.add_parser("run", help="one headless run on an IFC model"))
    p.add_argument("prompt")
    p.add_argument("--ifc", required=True, help="the IFC model to work on")
    p.add_argument("--model", help="model spec, e.g. anthropic:claude-sonnet-4-5 or scripted:PATH")
    p.add_argument("--json", action="store_true", help="print one stream chunk per line, as JSON")
    p.add_argument("--out", help="save committed changes here; MODEL is never modified")
    p.add_argument("--ids", metavar="FILE", help="an IDS file (buildingSMART Information Delivery Specification): "
                   "its requirements an automation makes fail are reported like schema findings")
    add_isolation_argument(p)
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from cloud.child_host import HostStartFailed
    from cloud.embedded import EmbeddedCore
    from cloud.ids_document import read_ids_file
    from cloud.vendors.base import ModelError
    from cloud.vendors.registry import ModelSpecError, allow_on_command_line, create_model, default_model_spec
    from ifc_host.ids_check import IdsProblem
    from ifc_host.model_file import BadModelError, open_checked

    spec = args.model or default_model_spec()
    if not spec:
        return fail("no model: set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY, or pass --model")
    try:
        allow_on_command_line(spec)  # the person's own machine: an openai-compat URL typed here (never gets the key)
        model = create_model(spec)
        open_checked(args.ifc)
        ids = read_ids_file(args.ids) if args.ids else None
    except (ModelSpecError, ModelError, BadModelError, IdsProblem) as exc:
        return fail(str(exc))
    try:
        core = EmbeddedCore(open_store(args), args.ifc, args.out, user=CLI_USER, isolation=args.isolation)
    except HostStartFailed as exc:
        return fail(str(exc))
    try:
        printer, outcome = Printer(), None
        session = core.new_session(spec)
        if ids:
            core.store.update_session(session["id"], ids=ids)
            session["ids"] = ids
        for chunk in core.run(session, model, args.prompt):
            data = chunk.to_json()
            if args.json:
                print(json.dumps(data), flush=True)
            else:
                printer.show(data)
            if chunk.type in ("Complete", "Error"):
                outcome = chunk.type
        return 0 if outcome == "Complete" else 1
    finally:
        core.close()

