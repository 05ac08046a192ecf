"""`nexus serve`: the orchestrator."""
from __future__ import annotations

import argparse
import errno
import importlib.util
import os
import re
import sys

from cloud.cli.common import default_db, fail, open_store, with_db
from cloud.config import Settings, redis_secret


def register(sub: argparse._SubParsersAction) -> None:
    p = with_db(sub.add_parser("serve", help="run the orchestrator"))
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--mcp-port", type=int, help="also serve the streamable HTTP MCP endpoint (/mcp) on this port")
    p.add_argument("--workers", type=int, default=1,
                   help="N > 1: N gunicorn gevent worker processes (needs NEXUS_REDIS_URL and the production extra)")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    if args.workers != 1:
        return _serve_workers(args)
    from cloud.server import listen
    from cloud.vendors.registry import default_model_spec
    from cloud.web.app import create_app

    app = create_app(open_store(args), Settings.from_env(), default_model=default_model_spec())
    try:  # both addresses bound before either is printed: a URL shown is one that answers
        server = listen(app, args.bind, args.port)
    except OSError as exc:
        return fail(_cannot_listen("--port", args.bind, args.port, exc))
    mcp = None
    if args.mcp_port is not None:
        from cloud.mcp.http import start_mcp_http

        try:
            mcp = start_mcp_http(app.extensions["nexus"], args.bind, args.mcp_port,
                                 chat_url=f"http://{args.bind}:{args.port}")
        except OSError as exc:
            server.server_close()
            return fail(_cannot_listen("--mcp-port", args.bind, args.mcp_port, exc))
    database = re.sub(r"//[^@/]*@", "//", args.db or default_db())  # no password in the output
    print(f"NexusAI orchestrator on http://{args.bind}:{args.port} (database {database})", flush=True)
    if mcp is not None:
        print(f"MCP endpoint (streamable HTTP, bearer token) on {mcp.url}", flush=True)
    server.serve_forever()
    return 0


def _cannot_listen(option: str, bind: str, port: int, exc: OSError) -> str:
    why = exc.strerror or str(exc)
    hint = f"; is another `nexus serve` running? pass another {option}" if exc.errno == errno.EADDRINUSE else ""
    return f"cannot listen on {bind}:{port}: {why}{hint}"


def _serve_workers(args: argparse.Namespace) -> int:
    """Several worker processes under gunicorn's gevent worker, meeting through Redis (docs/deployment.md)."""
    from cloud.distributed import REDIS_URL_ENV, redis_url

    if args.workers < 1:
        print("error: --workers must be at least 1", file=sys.stderr)
        return 2
    if not redis_url():
        print(f"error: several workers share runs, results and host connections through Redis: set {REDIS_URL_ENV}",
              file=sys.stderr)
        return 2
    redis_secret()  # ConfigurationError (one line) before any worker starts
    if args.mcp_port is not None:
        print("error: --mcp-port serves from one process; run `nexus serve --mcp-port` as its own instance",
              file=sys.stderr)
        return 2
    if importlib.util.find_spec("gunicorn") is None or importlib.util.find_spec("gevent") is None:
        print("error: --workers needs gunicorn with gevent: pip install -e '.[production]'", file=sys.stderr)
        return 2
    env = {**os.environ, "NEXUS_DB": args.db or os.environ.get("NEXUS_DB") or default_db()}
    if args.db:
        env.pop("NEXUS_DATABASE_URL", None)  # --db wins, as for one process
    database = re.sub(r"//[^@/]*@", "//", args.db or default_db())
    print(f"NexusAI orchestrator on http://{args.bind}:{args.port}, {args.workers} workers (database {database})",
          flush=True)
    command = [sys.executable, "-m", "gunicorn", "-k", "gevent", "--worker-connections", "1000",
               "-w", str(args.workers), "-b", f"{args.bind}:{args.port}", "cloud.wsgi:app"]
    os.execvpe(sys.executable, command, env)
    return 0
