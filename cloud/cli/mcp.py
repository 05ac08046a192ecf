"""`nexus mcp`: NexusAI as a stdio MCP server.

`--ifc MODEL.ifc` embeds the core (store, host websocket on 127.0.0.1, an IFC host in its own process);
`--server URL` bridges stdio to a deployment's streamable HTTP MCP endpoint (its hosts, policies, audit),
with the token from NEXUS_TOKEN or --token-file, never the command line. Standard output carries the
protocol: everything for people goes to standard error.
"""
from __future__ import annotations

import argparse
import sys

from cloud.cli.common import fail, open_store, with_db
from ifc_host.launcher import add_isolation_argument

MCP_USER = "mcp"
IFC_HOST_APP = "ifc"
START_MARGIN_S = 15.0  # a call waits this much longer than the host may take to connect (then the core says why)


def register(sub: argparse._SubParsersAction) -> None:
    p = with_db(sub.add_parser("mcp", help="NexusAI as a stdio MCP server (an IFC model, or a deployment)"))
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--ifc", help="the IFC model to serve (embedded core and IFC host)")
    where.add_argument("--server", help="a running orchestrator's URL (its /mcp endpoint)")
    p.add_argument("--out", help="--ifc: save committed changes here; MODEL is never modified")
    p.add_argument("--model", help="--ifc: model spec for run_task (default: from the API key set)")
    p.add_argument("--policy", choices=("auto", "ask", "readonly"), help="--ifc: run policy (default auto)")
    p.add_argument("--review-timeout", type=float, default=None, metavar="SECONDS",
                   help="--ifc: how long a held automation waits for Keep/Discard (then: discard)")
    p.add_argument("--image-max-px", type=int, default=None, help="longest side of images sent to the client")
    p.add_argument("--host-start-timeout", type=float, default=None, metavar="SECONDS",
                   help="--ifc: how long the IFC host may take to open the model and connect "
                        "(default 120 s + 3 s per MB of model)")
    p.add_argument("--token-file", help="--server: file holding the token (else NEXUS_TOKEN)")
    p.add_argument("--ref", action="append", default=[], metavar="OTHER.ifc",
                   help="--ifc: a reference model, read-only (repeatable): scripts see it as refs['OTHER.ifc']")
    add_isolation_argument(p)
    p.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    if args.server:
        from cloud.mcp.remote import serve_remote, token_from

        try:
            token = token_from(args.token_file)
        except (OSError, UnicodeDecodeError) as exc:
            return fail(f"cannot read the token file {args.token_file}: {exc}")
        if not token:
            return fail("no token: set NEXUS_TOKEN or pass --token-file PATH")
        return serve_remote(args.server, token)
    return serve_ifc(args)


def serve_ifc(args: argparse.Namespace) -> int:
    """Answers the client at once; the embedded core and its IFC host start meanwhile (a big model takes a
    while to open), and tool calls wait for them (cloud/mcp/starting.py). Only what is quick is checked here
    (a STEP file, whole): the host parses the model, and says why if it cannot."""
    from cloud.child_host import host_connect_timeout
    from cloud.config import Settings
    from cloud.embedded import EmbeddedCore
    from cloud.mcp.calls import Backend
    from cloud.mcp.server import NexusMcp
    from cloud.mcp.starting import Starting, step_file_problem
    from cloud.session_refs import RefsProblem, local_refs
    from cloud.vendors.registry import (
        ModelSpecError,
        allow_on_command_line,
        create_model,
        default_model_spec,
        missing_key,
    )

    problem = step_file_problem(args.ifc)
    if problem:
        return fail(problem)
    try:
        refs = local_refs(args.ref, args.ifc)
    except RefsProblem as exc:
        return fail(str(exc))
    problem = next((p for p in (step_file_problem(r["path"]) for r in refs) if p), None)
    if problem:
        return fail(problem)
    store = open_store(args)
    settings = Settings.from_env(**({"approval_timeout_s": args.review_timeout} if args.review_timeout else {}))
    token = store.auth.create_token(MCP_USER)  # the chat page's, for reviews; revoked with the server
    found = store.auth.user_for_token(token)
    cores: list[EmbeddedCore] = []
    host_start_timeout = args.host_start_timeout or host_connect_timeout(args.ifc)

    def start() -> Backend:
        try:
            core = EmbeddedCore(store, args.ifc, args.out, settings, user=MCP_USER, isolation=args.isolation,
                                connect_timeout_s=host_start_timeout)
        except Exception as exc:
            print(f"nexus mcp: {exc}", file=sys.stderr, flush=True)
            raise
        cores.append(core)
        print(f"NexusAI MCP server: the IFC host on {args.ifc} has connected; chat page (reviews under --policy "
              f"ask): {core.server.url}/?signin={store.auth.create_signin_code(token)}", file=sys.stderr, flush=True)
        return Backend.of(core.state, chat_url=core.server.url)

    def models(spec: str):  # the person's own machine: any spec they could type on `nexus run`
        no_key = missing_key(spec)  # in our words, not the vendor SDK's
        if no_key:
            raise ModelSpecError(no_key)
        allow_on_command_line(spec)
        return create_model(spec)

    print(f"NexusAI MCP server on {args.ifc}: starting its IFC host", file=sys.stderr, flush=True)
    starting = Starting(start, wait_s=host_start_timeout + START_MARGIN_S)
    try:
        server = NexusMcp(starting, lambda: MCP_USER, models, default_model=lambda: args.model or default_model_spec(),
                          image_max_px=args.image_max_px, policy=args.policy, refs=refs).build(host_app=IFC_HOST_APP)
        server.run("stdio")
        return 0
    finally:
        starting.join()  # a core still starting is closed once it is up (or has given up)
        for core in cores:
            core.close()
        if found is not None:
            store.auth.revoke_token(found.token_id)
