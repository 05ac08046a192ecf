"""The `nexus` command line (DESIGN.md section 3)."""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import platformdirs
import requests

from cloud.config import Settings
from cloud.store import Store

DEMO_DIR = Path(__file__).resolve().parent / "demo"


def default_db() -> str:
    return os.environ.get("NEXUS_DB") or str(Path(platformdirs.user_data_dir("nexusai")) / "nexus.db")


def _store(args: argparse.Namespace) -> Store:
    return Store(args.db or default_db())


def _fail(message: str, code: int = 2) -> int:
    print(f"nexus: {message}", file=sys.stderr)
    return code


def cmd_serve(args: argparse.Namespace) -> int:
    from cloud.vendors.registry import default_model_spec
    from cloud.web.app import create_app

    app = create_app(_store(args), Settings(), default_model=default_model_spec())
    print(f"NexusAI orchestrator on http://{args.bind}:{args.port} (database {args.db or default_db()})", flush=True)
    from cloud.server import serve_forever

    serve_forever(app, args.bind, args.port)
    return 0


def cmd_token_create(args: argparse.Namespace) -> int:
    token = _store(args).create_token(args.user, admin=args.admin)
    print(f"Token for {args.user}{' (admin)' if args.admin else ''}:")
    print(token)
    return 0


def cmd_sample_model(args: argparse.Namespace) -> int:
    from ifc_host.sample import write_sample_model

    summary = write_sample_model(args.out, storeys=args.storeys, seed=args.seed, scale=args.scale)
    counts = ", ".join(f"{summary[k]:,} {k}" for k in ("entities", "storeys", "walls", "doors", "windows", "spaces"))
    print(f"Wrote {args.out} ({summary['schema']}, {summary['bytes']:,} bytes): {counts}")
    return 0


def cmd_ifc_host(args: argparse.Namespace) -> int:
    from ifc_host.model_file import BadModelError
    from ifc_host.runtime import HostRejected, run_host

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        run_host(args.model, args.server, args.token, out_path=args.out)
    except (BadModelError, HostRejected, ValueError) as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        pass
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from cloud.vendors.registry import DEFAULT_MODELS, configured_vendors, default_model_spec

    configured = configured_vendors()
    for vendor, spec in DEFAULT_MODELS.items():
        state = "configured" if vendor in configured else "no key in the environment"
        print(f"{vendor:14} {spec:34} {state}")
    print("openai-compat  openai-compat:MODEL@BASE_URL       any OpenAI-compatible server (Ollama, vLLM, llama.cpp)")
    print("scripted       scripted:PATH                      a deterministic replay of a JSON script")
    print(f"default: {default_model_spec() or 'none (set a key, or pass --model)'}")
    return 0


class _LocalStack:
    """Orchestrator + IFC host in this process, connected over a real loopback websocket."""

    def __init__(self, store: Store, model_path: str, out_path: str | None, port: int = 0, bind: str = "127.0.0.1",
                 default_model: str | None = None, user: str = "cli", admin: bool = False):
        from cloud.server import start_server
        from cloud.web.app import create_app
        from ifc_host.runtime import start_host_thread

        self.store = store
        self.token = store.create_token(user, admin=admin)
        self.server = start_server(create_app(store, Settings(), default_model=default_model), bind, port)
        try:
            self.host = start_host_thread(model_path, self.server.url, self.token, out_path=out_path)
        except Exception:
            self.server.shutdown()
            raise
        try:
            self.host.wait_connected(60)
        except Exception:
            self.close()
            raise

    @property
    def url(self) -> str:
        return self.server.url

    def api(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(method, self.url + path, headers={"Authorization": f"Bearer {self.token}"}, **kwargs)

    def close(self) -> None:
        self.host.stop()
        self.server.shutdown()


def _sse_chunks(response: requests.Response) -> Iterator[dict[str, Any]]:
    for line in response.iter_lines(decode_unicode=True):
        if line and line.startswith("data: "):
            yield json.loads(line[6:])


def _allow_scripted(spec: str) -> None:
    if spec.startswith("scripted:"):
        directory = str(Path(spec.split(":", 1)[1]).resolve().parent)
        dirs = [d for d in os.environ.get("NEXUS_SCRIPTED_DIRS", "").split(os.pathsep) if d]
        os.environ["NEXUS_SCRIPTED_DIRS"] = os.pathsep.join([*dirs, directory])


class _Printer:
    """Human-readable rendering of a run in a terminal."""

    def __init__(self) -> None:
        self.last = None

    def show(self, chunk: dict[str, Any]) -> None:
        kind, content, meta = chunk["type"], chunk.get("content", ""), chunk.get("metadata") or {}
        if kind != self.last and self.last in ("Thinking", "Message", "ToolInputDelta"):
            print(flush=True)
        if kind == "Thinking":
            print(("\n[thinking] " if self.last != kind else "") + content, end="", flush=True)
        elif kind == "Message":
            print(content, end="", flush=True)
        elif kind == "ToolInputDelta":
            if self.last != kind:
                print(f"\n[{meta.get('name')}] ", end="")
            print(content, end="", flush=True)
        elif kind == "Metadata" and meta.get("kind") == "tool_result":
            print("\n--- result ---\n" + content + "\n--------------")
        elif kind == "Metadata" and meta.get("kind") in ("budget", "compaction", "reset_turn"):
            print(f"\n[{meta['kind']}] {content}")
        elif kind == "AgenticUsage":
            print(f"\n[usage] {content}")
        elif kind == "Error":
            print(f"\n[error] {content}")
        elif kind == "Complete":
            print("\n[complete]")
        self.last = kind


def cmd_run(args: argparse.Namespace) -> int:
    from cloud.vendors.registry import ModelSpecError, default_model_spec, split_spec
    from ifc_host.model_file import BadModelError, open_checked

    spec = args.model or default_model_spec()
    if not spec:
        return _fail("no model: set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY, or pass --model")
    try:
        split_spec(spec)
        open_checked(args.ifc)
    except (ModelSpecError, BadModelError) as exc:
        return _fail(str(exc))
    _allow_scripted(spec)
    stack = _LocalStack(_store(args), args.ifc, args.out)
    try:
        created = stack.api("POST", "/api/sessions", json={"host_id": stack.host.host_id, "model": spec})
        if created.status_code != 201:
            return _fail(f"could not create a session: {created.text}")
        session_id = created.json()["session_id"]
        response = stack.api("POST", f"/api/sessions/{session_id}/messages", json={"text": args.prompt}, stream=True)
        if response.status_code != 200:
            return _fail(f"the run was refused: {response.text}")
        printer, outcome = _Printer(), None
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


def cmd_demo(args: argparse.Namespace) -> int:
    from cloud.vendors.registry import default_model_spec
    from ifc_host.sample import write_sample_model

    data_dir = Path(platformdirs.user_data_dir("nexusai")) / "demo"
    data_dir.mkdir(parents=True, exist_ok=True)
    model_path = data_dir / "sample-building.ifc"
    print(f"[1/4] Generating a sample building at {model_path} ...", flush=True)
    write_sample_model(model_path, storeys=3)
    spec = args.model or default_model_spec()
    scripted = spec is None
    if scripted:
        spec = f"scripted:{DEMO_DIR / 'renumber_doors.json'}"
    os.environ["NEXUS_SCRIPTED_DIRS"] = os.pathsep.join(
        [d for d in [os.environ.get("NEXUS_SCRIPTED_DIRS", ""), str(DEMO_DIR)] if d])
    print(f"[2/4] Starting the orchestrator on http://{args.bind}:{args.port} ...", flush=True)
    store = _store(args)
    print("[3/4] Connecting an IFC host to the sample building ...", flush=True)
    stack = _LocalStack(store, str(model_path), None, port=args.port, bind=args.bind, default_model=spec,
                        user="demo", admin=True)
    print("[4/4] Ready.\n", flush=True)
    if scripted:
        print("No vendor API key is configured: this is a SCRIPTED DEMO. The model's turns are replayed from")
        print(f"{DEMO_DIR / 'renumber_doors.json'}; the IFC host, the transactions and the reports are real.")
        print("Set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY to talk to a real model.\n")
    else:
        print(f"Model: {spec}\n")
    print(f"Open the chat:      {stack.url}/?token={stack.token}")
    print(f"Admin console:      {stack.url}/admin (same sign-in)")
    print(f"Model file:         {model_path}")
    print("Press Ctrl-C to stop.", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("\nStopping.")
    finally:
        stack.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nexus", description="NexusAI: an AI agent for BIM authoring tools")
    sub = parser.add_subparsers(dest="command", required=True)

    def with_db(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--db", help="SQLite database (default: $NEXUS_DB or the user data directory)")
        return p

    p = with_db(sub.add_parser("serve", help="run the orchestrator"))
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("ifc-host", help="connect an IFC host runtime to an orchestrator")
    p.add_argument("model", help="the IFC file to serve")
    p.add_argument("--server", required=True, help="orchestrator URL, e.g. http://127.0.0.1:8765")
    p.add_argument("--token", required=True)
    p.add_argument("--out", help="save commits here instead of back to MODEL")
    p.set_defaults(func=cmd_ifc_host)

    p = sub.add_parser("sample-model", help="write a realistic sample building")
    p.add_argument("out")
    p.add_argument("--storeys", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scale", type=int, default=1, help="grow each storey's plan (for benchmarks)")
    p.set_defaults(func=cmd_sample_model)

    p = with_db(sub.add_parser("demo", help="orchestrator + IFC host on a sample building; prints the chat URL"))
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--model", help="model spec (default: the first configured vendor, else a scripted demo)")
    p.set_defaults(func=cmd_demo)

    p = with_db(sub.add_parser("run", help="one headless run on an IFC model"))
    p.add_argument("prompt")
    p.add_argument("--ifc", required=True, help="the IFC model to work on")
    p.add_argument("--model", help="model spec, e.g. anthropic:claude-sonnet-4-5 or scripted:PATH")
    p.add_argument("--json", action="store_true", help="print one stream chunk per line, as JSON")
    p.add_argument("--out", help="save committed changes here; MODEL is never modified")
    p.set_defaults(func=cmd_run)

    token = sub.add_parser("token", help="manage access tokens").add_subparsers(dest="token_command", required=True)
    p = with_db(token.add_parser("create", help="create a token for USER and print it"))
    p.add_argument("user")
    p.add_argument("--admin", action="store_true")
    p.set_defaults(func=cmd_token_create)

    p = sub.add_parser("models", help="list model vendors and whether they are configured")
    p.set_defaults(func=cmd_models)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    threading.current_thread().name = "nexus"
    sys.exit(main())
