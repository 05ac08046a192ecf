"""`nexus ifc-host MODEL.ifc --server URL`: connect an IFC host runtime to an orchestrator.

The token comes from NEXUS_TOKEN or --token-file PATH, never the command line (see ifc_host.launcher).
"""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    from ifc_host.launcher import add_host_arguments

    p = sub.add_parser("ifc-host", help="connect an IFC host runtime to an orchestrator (token: $NEXUS_TOKEN "
                                        "or --token-file)")
    add_host_arguments(p)
    p.set_defaults(func=cmd_ifc_host)


def cmd_ifc_host(args: argparse.Namespace) -> int:
    from ifc_host.launcher import serve_from_arguments

    return serve_from_arguments(args)
