"""Which schema revision a database is at, and which is the newest, read without Alembic: every process opening
the store asks, and only one whose database is behind needs Alembic itself (cloud/migrations/, about 0.25 s to
import) to upgrade it.

The newest revision is read from the revision scripts' `revision = "..."` and `down_revision = ...` lines (the
one no other script names as its parent); the revision a database is at from its `alembic_version` table, as
Alembic reads it. tests/test_store.py holds both to what Alembic itself says.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import inspect
from sqlalchemy.engine import Connection

VERSIONS = Path(__file__).resolve().parent / "migrations" / "versions"
VERSION_TABLE = "alembic_version"
LEGACY_MARKER = "users"  # a table every database of this product has had since the first version
_REVISION = re.compile(r"^revision = \"(\w+)\"$", re.MULTILINE)
_DOWN_REVISION = re.compile(r"^down_revision = (?:None|\"(\w+)\")$", re.MULTILINE)


class SchemaError(RuntimeError):
    """The database is at a revision this version of NexusAI does not know (made by a newer one)."""


@dataclass(frozen=True)
class Upgrade:
    before: str | None  # None: an empty database
    after: str
    stamped: str | None = None  # the revision a database from before versioned migrations was recognised at


@functools.cache
def head() -> str:
    """The newest revision: the one no revision script names as its `down_revision`."""
    revisions, parents = set(), set()
    for script in sorted(VERSIONS.glob("[0-9]*.py")):
        text = script.read_text(encoding="utf-8")
        revision, down = _REVISION.search(text), _DOWN_REVISION.search(text)
        if revision is None or down is None:
            raise SchemaError(f"{script.name}: no `revision = \"...\"` or `down_revision = ...` line")
        revisions.add(revision.group(1))
        if down.group(1):
            parents.add(down.group(1))
    heads = revisions - parents
    if len(heads) != 1:
        raise SchemaError(f"the revision scripts have {len(heads)} heads ({', '.join(sorted(heads))}), not one")
    return heads.pop()


def current(conn: Connection) -> str | None:
    """The revision the database is at; None when it has no version table (empty, or from before)."""
    if not inspect(conn).has_table(VERSION_TABLE):
        return None
    rows = conn.exec_driver_sql(f"SELECT version_num FROM {VERSION_TABLE}").fetchall()
    if len(rows) > 1:
        raise SchemaError(f"the database's {VERSION_TABLE} table holds {len(rows)} revisions, not one")
    return rows[0][0] if rows else None


def is_legacy(conn: Connection) -> bool:
    """Tables of this product but no version table: made before versioned migrations."""
    tables = set(inspect(conn).get_table_names())
    return VERSION_TABLE not in tables and LEGACY_MARKER in tables
