"""Versioned schema migrations (Alembic revision scripts in `versions/`), run from code: no alembic.ini,
no env.py. `Store()` upgrades its database to the newest revision at start; `nexus db upgrade` and
`nexus db current` do it, or show it, for an operator.

The revision a database is at lives in its `alembic_version` table. A database made before versioned
migrations (tables present, no `alembic_version`) is recognised: the tables of the first revision it
lacks are created, it is stamped with the last revision whose change it already has, and upgraded from
there. The caller holds the schema lock, so several processes starting at once take their turn.

Which revision a database is at, and the newest, are read without Alembic (cloud/schema_revision.py): this
package is imported only when a database is to be created or upgraded.
"""
from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path

from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from cloud.schema_revision import SchemaError, Upgrade, current, head, is_legacy

FOLDER = Path(__file__).resolve().parent
# Revision scripts reach their database through Alembic's module-global `op` proxy: one migration at a
# time in a process (stores of different databases opened at once by several threads would collide).
_RUNNING = threading.Lock()


@functools.cache
def script_directory() -> ScriptDirectory:
    return ScriptDirectory(str(FOLDER))


def has_columns(conn: Connection, table: str, *columns: str) -> bool:
    names = {c["name"] for c in inspect(conn).get_columns(table)}
    return set(columns) <= names


def _legacy_stamp(conn: Connection, script: ScriptDirectory) -> str:
    """Create the first revision's missing tables; the last revision, in order, whose change is present."""
    revisions = list(reversed(list(script.walk_revisions("base", "heads"))))  # oldest first
    first = revisions[0]
    first.module.schema().create_all(conn, checkfirst=True)
    stamp = first.revision
    for revision in revisions[1:]:
        present: Callable[[Connection], bool] | None = getattr(revision.module, "present", None)
        if present is None or not present(conn):
            break
        stamp = revision.revision
    return stamp


def upgrade(conn: Connection, target: str = "heads") -> Upgrade:
    """Bring the database on `conn` (inside the caller's transaction, under its schema lock) to `target`."""
    with _RUNNING:
        return _upgrade(conn, target)


def _upgrade(conn: Connection, target: str) -> Upgrade:
    script = script_directory()
    before = current(conn)
    if before is not None:
        try:
            script.get_revision(before)
        except CommandError:
            raise SchemaError(f"the database is at schema revision {before}, which this version of NexusAI "
                              f"does not know (its newest is {head()}): it was upgraded by a newer version") from None
    stamped = None
    if before is None and is_legacy(conn):
        stamped = _legacy_stamp(conn, script)
        context = MigrationContext.configure(conn)
        context.stamp(script, stamped)

    def steps(heads: tuple[str, ...], _context: MigrationContext) -> list:
        return script._upgrade_revs(target, heads)

    context = MigrationContext.configure(conn, opts={"script": script, "fn": steps})
    with Operations.context(context):
        context.run_migrations()
    after = current(conn)
    assert after is not None
    return Upgrade(before, after, stamped)
