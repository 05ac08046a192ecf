"""`nexus token create USER [--admin | --host]`, `nexus token list`, `nexus token revoke ID`,
`nexus token demote ID`.

`create` prints the new token alone on the last line. Admin is a property of that one token: a user's
other tokens keep exactly the rights they had. A `--host` token connects a host runtime and nothing else.
"""
from __future__ import annotations

import argparse
import time

from cloud.cli.common import fail, open_store, with_db


def register(sub: argparse._SubParsersAction) -> None:
    token = sub.add_parser("token", help="manage access tokens").add_subparsers(dest="token_command", required=True)
    p = with_db(token.add_parser("create", help="create a token for USER and print it"))
    p.add_argument("user")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--admin", action="store_true", help="this token may use the admin console and API")
    kind.add_argument("--host", action="store_true", help="this token can only connect a host runtime")
    p.set_defaults(func=cmd_token_create)
    p = with_db(token.add_parser("list", help="list tokens (ids, users, rights; never the tokens themselves)"))
    p.set_defaults(func=cmd_token_list)
    p = with_db(token.add_parser("revoke", help="revoke a token by id (its browser sign-ins and hosts end)"))
    p.add_argument("token_id")
    p.set_defaults(func=cmd_token_revoke)
    p = with_db(token.add_parser("demote", help="take admin rights away from a token by id"))
    p.add_argument("token_id")
    p.set_defaults(func=cmd_token_demote)


def cmd_token_create(args: argparse.Namespace) -> int:
    try:
        token = open_store(args).auth.create_token(args.user, admin=args.admin, scope="host" if args.host else "user")
    except ValueError as exc:
        return fail(str(exc))
    print(f"Token for {args.user}{' (admin)' if args.admin else ''}{' (host only)' if args.host else ''}:")
    print(token)
    return 0


def cmd_token_list(args: argparse.Namespace) -> int:
    for row in open_store(args).auth.list_tokens():
        rights = "admin" if row["is_admin"] else ("host only" if row["scope"] == "host" else "user")
        created = time.strftime("%Y-%m-%d %H:%M", time.gmtime(row["created"]))
        state = f"revoked {time.strftime('%Y-%m-%d %H:%M', time.gmtime(row['revoked']))}" if row["revoked"] else "active"
        print(f"{row['id']}  {row['user_name']:<20} {rights:<9} created {created}  {state}")
    return 0


def cmd_token_revoke(args: argparse.Namespace) -> int:
    if not open_store(args).auth.revoke_token(args.token_id):
        return fail(f"no active token {args.token_id}")
    print(f"Revoked {args.token_id} (a running server closes hosts connected with it within seconds).")
    return 0


def cmd_token_demote(args: argparse.Namespace) -> int:
    if not open_store(args).auth.set_token_admin(args.token_id, False):
        return fail(f"no active user token {args.token_id}")
    print(f"Token {args.token_id} is no longer an admin token.")
    return 0
