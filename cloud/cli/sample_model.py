"""`nexus sample-model OUT.ifc`: write a realistic sample building."""
from __future__ import annotations

import argparse
from pathlib import Path

from cloud.cli.common import fail


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sample-model", help="write a realistic sample building")
    p.add_argument("out")
    p.add_argument("--storeys", type=int, default=3, help="1 to 200 (default 3)")
    p.add_argument("--seed", type=int, default=0, help="any whole number: same seed, same file")
    p.add_argument("--scale", type=int, default=1, help="grow each storey's plan, 1 to 500 (for benchmarks)")
    p.set_defaults(func=cmd_sample_model)


def cmd_sample_model(args: argparse.Namespace) -> int:
    from ifc_host.sample import check_sample_arguments, write_sample_model

    try:
        check_sample_arguments(args.storeys, args.seed, args.scale)
    except ValueError as exc:
        return fail(f"--{exc}")  # "--storeys must be a whole number from 1 to 200, not -3"
    if Path(args.out).is_dir():
        return fail(f"{args.out} is a folder: give the path of the .ifc file to write")
    try:
        summary = write_sample_model(args.out, storeys=args.storeys, seed=args.seed, scale=args.scale)
    except OSError as exc:
        return fail(f"cannot write {args.out}: {exc.strerror or exc}")
    counts = ", ".join(f"{summary[k]:,} {k}" for k in ("entities", "storeys", "walls", "doors", "windows", "spaces"))
    print(f"Wrote {args.out} ({summary['schema']}, {summary['bytes']:,} bytes): {counts}")
    return 0
