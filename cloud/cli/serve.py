"""`nexus serve`: the orchestrator."""
from __future__ import annotations

import argparse
import re

from cloud.cli.common import default_db, open_store, with_db
from cloud.config import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = with_db(sub.add_parser("serve", help="run the orchestrator"))
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--mcp-port", type=int, help="also serve the streamable HTTP MCP endpoint (/mcp) on this port")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from cloud.server import serve_forever
    from cloud.vendors.registry import default_model_spec
    from cloud.web.app import create_app

    app = create_app(open_store(args), Settings.from_env(), default_model=default_model_spec())
    database = re.sub(r"//[^@/]*@", "//", args.db or default_db())  # no password in the output
    print(f"NexusAI orchestrator on http://{args.bind}:{args.port} (database {database})", flush=True)
    if args.mcp_port is not None:
        from cloud.mcp.http import start_mcp_http

        mcp = start_mcp_http(app.extensions["nexus"], args.bind, args.mcp_port)
        print(f"MCP endpoint (streamable HTTP, bearer token) on {mcp.url}", flush=True)
    serve_forever(app, args.bind, args.port)
    return 0
