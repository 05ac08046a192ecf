"""`nexus demo`: orchestrator + IFC host on a fresh sample building + a token; prints the chat URL.

Each demo works in a folder of its own (under the user data directory, removed when it stops): its own copy
of the sample building, and a batch root with a few more sample models so "Apply to other models…" works.
The batch root holds them under `<root>/<demo user>/models/` (batch paths resolve under
NEXUS_BATCH_ROOT/<user>/) and, through a link, under `<root>/models/` too (a server resolving paths under the
root itself); either way the glob `models/*.ifc` finds them. Stopping the demo (Ctrl-C or SIGTERM) revokes
the tokens it created.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import platformdirs

from cloud.cli.common import fail, open_store, with_db
from ifc_host.launcher import add_isolation_argument

DEMO_DIR = Path(__file__).resolve().parents[1] / "demo"
DEMO_USER = "demo"
DEMO_SCRIPT = "renumber_doors.json"  # the default scripted conversation; the landing examples pick their own
BATCH_ROOT_ENV = "NEXUS_BATCH_ROOT"
# The batch root's sample models: (file name, storeys, seed).
BATCH_MODELS = (("north-block.ifc", 2, 1), ("south-block.ifc", 3, 2), ("annex.ifc", 1, 3))


def register(sub: argparse._SubParsersAction) -> None:
    p = with_db(sub.add_parser("demo", help="orchestrator + IFC host on a sample building; prints the chat URL"))
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765, help="first port to try (the next free one is used)")
    p.add_argument("--model", help="model spec (default: the first configured vendor, else a scripted demo)")
    add_isolation_argument(p)
    p.set_defaults(func=cmd_demo)


def make_batch_root(root: Path, user: str = DEMO_USER) -> Path:
    """Sample models under `root/<user>/models/`, also reachable as `root/models/` (a link inside the root)."""
    from ifc_host.sample import write_sample_model

    models = root / user / "models"
    models.mkdir(parents=True, exist_ok=True)
    for name, storeys, seed in BATCH_MODELS:
        write_sample_model(models / name, storeys=storeys, seed=seed)
    (root / "models").symlink_to(Path(user) / "models", target_is_directory=True)
    return root


def _stop_on_sigterm() -> None:
    """SIGTERM (a service manager, CI) stops the demo like Ctrl-C: through `finally`, tokens revoked."""
    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)


def cmd_demo(args: argparse.Namespace) -> int:
    data_dir = Path(platformdirs.user_data_dir("nexusai")) / "demo"
    data_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=data_dir))  # this demo's own files: no other demo's
    try:
        return _run_demo(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_demo(args: argparse.Namespace, work: Path) -> int:
    from cloud.child_host import HostStartFailed
    from cloud.cli.local_stack import LocalStack
    from cloud.server import first_free_port
    from cloud.vendors.registry import default_model_spec
    from ifc_host.sample import write_sample_model

    model_path = work / "sample-building.ifc"
    print(f"[1/4] Generating a sample building at {model_path} ...", flush=True)
    write_sample_model(model_path, storeys=3)
    if os.environ.get(BATCH_ROOT_ENV, "").strip():
        batch_root = Path(os.environ[BATCH_ROOT_ENV])
    else:
        batch_root = make_batch_root(work / "batch")
        os.environ[BATCH_ROOT_ENV] = str(batch_root)
    spec = args.model or default_model_spec()
    scripted = spec is None
    if scripted:
        spec = f"scripted:{DEMO_DIR / DEMO_SCRIPT}"
    os.environ["NEXUS_SCRIPTED_DIRS"] = os.pathsep.join(
        [d for d in [os.environ.get("NEXUS_SCRIPTED_DIRS", ""), str(DEMO_DIR)] if d])
    port = first_free_port(args.bind, args.port)  # 8765 taken (another demo, another program): the next one
    print(f"[2/4] Starting the orchestrator on http://{args.bind}:{port} ...", flush=True)
    store = open_store(args)
    print("[3/4] Connecting an IFC host to the sample building ...", flush=True)
    _stop_on_sigterm()
    try:
        stack = LocalStack(store, str(model_path), None, port=port, bind=args.bind, default_model=spec,
                           user=DEMO_USER, admin=True, isolation=args.isolation)
    except HostStartFailed as exc:
        return fail(str(exc))
    try:
        print("[4/4] Ready.\n", flush=True)
        if scripted:
            print("No vendor API key is configured: this is a SCRIPTED DEMO. The model's turns are replayed from")
            print(f"{DEMO_DIR} (one script per example on the chat page); the IFC host, the transactions and the")
            print("reports are real. Set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY to talk to a real model.\n")
        else:
            print(f"Model: {spec}\n")
        # A one-time sign-in link: the token itself never goes into a URL (browser history, logs).
        print(f"Open the chat:      {stack.url}/?signin={store.auth.create_signin_code(stack.token)}")
        print(f"Admin console:      {stack.url}/admin (same sign-in)")
        print(f"Model file:         {model_path} (this demo's own copy; removed when it stops)")
        print(f"Batch root:         {batch_root} (sample models: models/*.ifc)")
        print(f"IFC host log:       {stack.host.log_path} (its own process; scripts run sandboxed)")
        print("Press Ctrl-C to stop.", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("\nStopping (the demo's tokens are revoked).", flush=True)
    finally:
        stack.close()
    return 0
