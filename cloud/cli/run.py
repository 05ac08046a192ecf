"""`nexus run "PROMPT" --ifc MODEL.ifc`: one headless run, streamed to the terminal.

The loop runs in this process, called directly (no HTTP to a server of its own, no SSE). The IFC host is
a child process that connects to this process's host websocket on 127.0.0.1, so the scripts it runs never
share the orchestrator's process (its memory, its keys, its database handle).
"""
from __future__ import annotations

import argparse
import json
import threading

from cloud.cli.common import fail, open_store, with_db
from cloud.cli.local_stack import HostProcess, HostStartFailed, wait_for_host
from cloud.cli.printer import Printer

CLI_USER = "cli"


def register(sub: argparse._SubParsersAction) -> None:
    p = with_db(sub.add_parser("run", help="one headless run on an IFC model"))
    p.add_argument("prompt")
    p.add_argument("--ifc", required=True, help="the IFC model to work on")
    p.add_argument("--model", help="model spec, e.g. anthropic:claude-sonnet-4-5 or scripted:PATH")
    p.add_argument("--json", action="store_true", help="print one stream chunk per line, as JSON")
    p.add_argument("--out", help="save committed changes here; MODEL is never modified")
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from cloud.assembly import run_session
    from cloud.config import Settings
    from cloud.hostlink import session_link
    from cloud.server import start_server
    from cloud.vendors.base import ModelError
    from cloud.vendors.registry import ModelSpecError, create_model, default_model_spec
    from cloud.web.app import create_app
    from ifc_host.model_file import BadModelError, open_checked

    spec = args.model or default_model_spec()
    if not spec:
        return fail("no model: set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY, or pass --model")
    try:
        model = create_model(spec)
        open_checked(args.ifc)
    except (ModelSpecError, ModelError, BadModelError) as exc:
        return fail(str(exc))
    store = open_store(args)
    settings = Settings()
    app = create_app(store, settings)
    state = app.extensions["nexus"]
    server = start_server(app, "127.0.0.1", 0)
    host = HostProcess(args.ifc, server.url, store.create_token(CLI_USER), args.out)
    try:
        try:
            host_id = wait_for_host(state.hosts, CLI_USER, host)
        except HostStartFailed as exc:
            return fail(str(exc))
        row = store.get_session(store.create_session(CLI_USER, host_id, spec, {}))
        link = session_link(state.hosts, state.channel, row)
        printer, outcome = Printer(), None
        for chunk in run_session(store, settings, model, link, row, args.prompt, threading.Event()):
            data = chunk.to_json()
            if args.json:
                print(json.dumps(data), flush=True)
            else:
                printer.show(data)
            if chunk.type in ("Complete", "Error"):
                outcome = chunk.type
        return 0 if outcome == "Complete" else 1
    finally:
        host.stop()
        server.shutdown()
