"""`nexus sample-model OUT.ifc`: write a realistic sample building."""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sample-model", help="write a realistic sample building")
    p.add_argument("out")
    p.add_argument("--storeys", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scale", type=int, default=1, help="grow each storey's plan (for benchmarks)")
    p.set_defaults(func=cmd_sample_model)


def cmd_sample_model(args: argparse.Namespace) -> int:
    from ifc_host.sample import write_sample_model

    summary = write_sample_model(args.out, storeys=args.storeys, seed=args.seed, scale=args.scale)
    counts = ", ".join(f"{summary[k]:,} {k}" for k in ("entities", "storeys", "walls", "doors", "windows", "spaces"))
    print(f"Wrote {args.out} ({summary['schema']}, {summary['bytes']:,} bytes): {counts}")
    return 0
