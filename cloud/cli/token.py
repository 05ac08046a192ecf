"""`nexus token create USER`: print a new access token, alone on the last line."""
from __future__ import annotations

import argparse

from cloud.cli.common import open_store, with_db


def register(sub: argparse._SubParsersAction) -> None:
    token = sub.add_parser("token", help="manage access tokens").add_subparsers(dest="token_command", required=True)
    p = with_db(token.add_parser("create", help="create a token for USER and print it"))
    p.add_argument("user")
    p.add_argument("--admin", action="store_true")
    p.set_defaults(func=cmd_token_create)


def cmd_token_create(args: argparse.Namespace) -> int:
    token = open_store(args).create_token(args.user, admin=args.admin)
    print(f"Token for {args.user}{' (admin)' if args.admin else ''}:")
    print(token)
    return 0
