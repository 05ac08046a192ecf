"""`nexus ifc-host MODEL.ifc --server URL`: connect an IFC host runtime to an orchestrator."""
from __future__ import annotations

import argparse
import logging

from cloud.cli.common import fail


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ifc-host", help="connect an IFC host runtime to an orchestrator")
    p.add_argument("model", help="the IFC file to serve")
    p.add_argument("--server", required=True, help="orchestrator URL, e.g. http://127.0.0.1:8765")
    p.add_argument("--token", required=True)
    p.add_argument("--out", help="save commits here instead of back to MODEL")
    p.set_defaults(func=cmd_ifc_host)


def cmd_ifc_host(args: argparse.Namespace) -> int:
    from ifc_host.model_file import BadModelError
    from ifc_host.runtime import HostRejected, run_host

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        run_host(args.model, args.server, args.token, out_path=args.out)
    except (BadModelError, HostRejected, ValueError) as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        pass
    return 0
