"""`nexus db upgrade` and `nexus db current`: the store's schema revision, for operators.

Every server process upgrades the database at start already; `upgrade` does it ahead of a rollout (one
process, before the others start), `current` shows where a database is without changing it.
"""
from __future__ import annotations

import argparse
import re

from cloud.cli.common import default_db, fail, with_db


def register(sub: argparse._SubParsersAction) -> None:
    db = sub.add_parser("db", help="the store's schema: upgrade it, show its revision").add_subparsers(
        dest="db_command", required=True)
    p = with_db(db.add_parser("upgrade", help="upgrade the database to the newest schema revision"))
    p.set_defaults(func=cmd_db_upgrade)
    p = with_db(db.add_parser("current", help="show the database's schema revision (changes nothing)"))
    p.set_defaults(func=cmd_db_current)


def _shown(target: str) -> str:
    return re.sub(r"//[^@/]*@", "//", target)  # no password in the output


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    from cloud.schema_revision import SchemaError
    from cloud.store import Store

    target = args.db or default_db()
    store = Store(target, migrate=False)
    try:
        done = store.migrate()
    except SchemaError as exc:
        return fail(str(exc))
    finally:
        store.close()
    if done.stamped:
        print(f"{_shown(target)}: made before versioned migrations; recognised as revision {done.stamped}")
    if done.before == done.after:
        print(f"{_shown(target)}: already at revision {done.after} (newest)")
    else:
        print(f"{_shown(target)}: upgraded from {done.before or 'an empty database'} to {done.after} (newest)")
    return 0


def cmd_db_current(args: argparse.Namespace) -> int:
    from cloud import schema_revision
    from cloud.store import Store

    target = args.db or default_db()
    store = Store(target, migrate=False)
    try:
        with store.engine.connect() as conn:
            revision, legacy = schema_revision.current(conn), schema_revision.is_legacy(conn)
    finally:
        store.close()
    head = schema_revision.head()
    if revision is None:
        state = "made before versioned migrations (upgraded at the next start)" if legacy else "empty"
        print(f"{_shown(target)}: no revision, {state}; newest is {head}")
        return 1
    print(f"{_shown(target)}: revision {revision} ({'newest' if revision == head else f'newest is {head}'})")
    return 0 if revision == head else 1
