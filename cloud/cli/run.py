"""`nexus run "PROMPT" --ifc MODEL.ifc`: one headless run, streamed to the terminal."""
from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from typing import Any

import requests

from cloud.cli.common import fail, open_store, with_db
from cloud.cli.local_stack import LocalStack, allow_scripted
from cloud.cli.printer import Printer


def register(sub: argparse._SubParsersAction) -> None:
    p = with_db(sub.add_parser("run", help="one headless run on an IFC model"))
    p.add_argument("prompt")
    p.add_argument("--ifc", required=True, help="the IFC model to work on")
    p.add_argument("--model", help="model spec, e.g. anthropic:claude-sonnet-4-5 or scripted:PATH")
    p.add_argument("--json", action="store_true", help="print one stream chunk per line, as JSON")
    p.add_argument("--out", help="save committed changes here; MODEL is never modified")
    p.set_defaults(func=cmd_run)


def _sse_chunks(response: requests.Response) -> Iterator[dict[str, Any]]:
    for line in response.iter_lines(decode_unicode=True):
        if line and line.startswith("data: "):
            yield json.loads(line[6:])


def cmd_run(args: argparse.Namespace) -> int:
    from cloud.vendors.registry import ModelSpecError, default_model_spec, split_spec
    from ifc_host.model_file import BadModelError, open_checked

    spec = args.model or default_model_spec()
    if not spec:
        return fail("no model: set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY, or pass --model")
    try:
        split_spec(spec)
        open_checked(args.ifc)
    except (ModelSpecError, BadModelError) as exc:
        return fail(str(exc))
    allow_scripted(spec)
    stack = LocalStack(open_store(args), args.ifc, args.out)
    try:
        created = stack.api("POST", "/api/sessions", json={"host_id": stack.host.host_id, "model": spec})
        if created.status_code != 201:
            return fail(f"could not create a session: {created.text}")
        session_id = created.json()["session_id"]
        response = stack.api("POST", f"/api/sessions/{session_id}/messages", json={"text": args.prompt}, stream=True)
        if response.status_code != 200:
            return fail(f"the run was refused: {response.text}")
        printer, outcome = Printer(), None
        for chunk in _sse_chunks(response):
            if args.json:
                print(json.dumps(chunk), flush=True)
            else:
                printer.show(chunk)
            if chunk["type"] in ("Complete", "Error"):
                outcome = chunk["type"]
        return 0 if outcome == "Complete" else 1
    finally:
        stack.close()
