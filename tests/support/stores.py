"""A fresh SQLite store for a test without running the migrations again: the schema is built once per process
(alembic takes about half a second per database, most of a test server's start) and copied byte for byte."""
from __future__ import annotations

import atexit
import functools
import shutil
import sqlite3
import tempfile
from pathlib import Path

from cloud.store import Store


@functools.cache
def _template() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="nexus-test-schema-"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / "schema.db"
    Store(path).engine.dispose()  # migrated to the newest revision, every connection closed
    return path


def fresh_store(target: str | Path) -> Store:
    """Store(target), where a SQLite file that does not exist yet starts as a copy of a migrated empty one.
    Anything else (a file that exists, ":memory:", a PostgreSQL URL) is opened, and migrated, as it is."""
    if "://" not in str(target) and str(target) != ":memory:" and not Path(target).exists():
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        source, copy = sqlite3.connect(_template()), sqlite3.connect(target)
        try:
            source.backup(copy)  # consistent whatever the journal mode (the store runs in WAL)
        finally:
            source.close()
            copy.close()
    return Store(target)
