"""The `nexus` command line: one module per command, each adding its own subparser."""
from __future__ import annotations

import argparse
import faulthandler
import signal
import sys
import threading

from cloud.cli import (
    batch,
    check,
    db,
    demo,
    eval,
    ifc_host,
    mcp,
    models,
    rules,
    run,
    sample_model,
    serve,
    skill,
    token,
)
from cloud.cli.common import default_db
from cloud.config import ConfigurationError

__all__ = ["build_parser", "default_db", "main"]

COMMANDS = (serve, ifc_host, sample_model, demo, run, token, models, mcp, batch, eval, skill, db, check, rules)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nexus", description="NexusAI: an AI agent for BIM authoring tools")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    return parser


def _stop_on_sigterm(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # A crash in native code (IfcOpenShell, the geometry kernels) leaves each thread's Python stack on stderr.
    faulthandler.enable()
    if threading.current_thread() is threading.main_thread():
        # A service manager (or a script) stops a command with SIGTERM: shut down as on Ctrl-C, children included.
        signal.signal(signal.SIGTERM, _stop_on_sigterm)
        # And SIGINT always interrupts: a process started with SIGINT ignored (a background job of a
        # non-interactive shell, some CI runners) keeps it ignored, and `nexus demo` would never stop on it.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except ConfigurationError as exc:  # the deployment's settings, said in one line
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run_main() -> None:
    threading.current_thread().name = "nexus"
    sys.exit(main())
