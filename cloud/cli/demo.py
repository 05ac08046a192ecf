"""`nexus demo`: orchestrator + IFC host on a fresh sample building + a token; prints the chat URL."""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import platformdirs

from cloud.child_host import HostStartFailed
from cloud.cli.common import fail, open_store, with_db
from cloud.cli.local_stack import LocalStack
from cloud.server import first_free_port
from ifc_host.launcher import add_isolation_argument

DEMO_DIR = Path(__file__).resolve().parents[1] / "demo"


def register(sub: argparse._SubParsersAction) -> None:
    p = with_db(sub.add_parser("demo", help="orchestrator + IFC host on a sample building; prints the chat URL"))
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765, help="first port to try (the next free one is used)")
    p.add_argument("--model", help="model spec (default: the first configured vendor, else a scripted demo)")
    add_isolation_argument(p)
    p.set_defaults(func=cmd_demo)


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
    port = first_free_port(args.bind, args.port)  # 8765 taken (another demo, another program): the next one
    print(f"[2/4] Starting the orchestrator on http://{args.bind}:{port} ...", flush=True)
    store = open_store(args)
    print("[3/4] Connecting an IFC host to the sample building ...", flush=True)
    try:
        stack = LocalStack(store, str(model_path), None, port=port, bind=args.bind, default_model=spec,
                           user="demo", admin=True, isolation=args.isolation)
    except HostStartFailed as exc:
        return fail(str(exc))
    print("[4/4] Ready.\n", flush=True)
    if scripted:
        print("No vendor API key is configured: this is a SCRIPTED DEMO. The model's turns are replayed from")
        print(f"{DEMO_DIR / 'renumber_doors.json'}; the IFC host, the transactions and the reports are real.")
        print("Set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY to talk to a real model.\n")
    else:
        print(f"Model: {spec}\n")
    # A one-time sign-in link: the token itself never goes into a URL (browser history, logs).
    print(f"Open the chat:      {stack.url}/?signin={store.create_signin_code(stack.token)}")
    print(f"Admin console:      {stack.url}/admin (same sign-in)")
    print(f"Model file:         {model_path}")
    print(f"IFC host log:       {stack.host.log_path} (its own process; scripts run sandboxed)")
    print("Press Ctrl-C to stop.", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("\nStopping.")
    finally:
        stack.close()
    return 0
