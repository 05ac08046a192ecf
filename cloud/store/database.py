"""The connection to SQLite or PostgreSQL that every part of the store shares (cloud/store/__init__.py).

One implementation for both databases on SQLAlchemy Core: the schema comes from versioned Alembic revisions
(cloud/migrations/), run at start under a lock when the database is behind (cloud/schema_revision.py tells, without
Alembic); cloud/store/schema.py declares what the newest revision makes (a test holds the two equal). The queries
are plain SQL both dialects read alike, with `?` placeholders, and the few differences (substring search,
locking) are chosen per dialect here. SQLite stays the embedded default (a file path); a `postgresql://` URL
selects PostgreSQL.

Every write takes its own short transaction: `BEGIN IMMEDIATE` on SQLite (Python's default transaction
handling loses updates under threads), row or advisory locks on PostgreSQL where a write reads first.
Nothing holds a transaction across a long-lived stream. Connections come from a small pool.

The parts' reads and writes (`read`, `write`) run their statements on the pooled driver connection itself:
SQLAlchemy's statement layer (events, result proxies, its transaction object) cost about 0.15 ms of each
store call, and a tool round trip makes half a dozen. Migrations and the team library keep a SQLAlchemy
`Connection` (`core_write`); both paths share the one pool and its connection settings. A driver connection
a part has finished with is kept ready for the next call (up to MAX_IDLE_CONNECTIONS) instead of going back
through SQLAlchemy's pool, whose check-out and check-in (its bookkeeping, the reset's rollback) cost about 30 us
of each call; on PostgreSQL one idle longer than ALIVE_BYPASS_S goes back through the pool, whose pre-ping then
checks it is still alive (HikariCP's rule: a connection used half a second ago is taken without a ping).
"""
from __future__ import annotations

import re
import sys
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, CursorResult, Engine
from sqlalchemy.pool import QueuePool

from cloud import schema_revision
from cloud.schema_revision import Upgrade

MAX_IDLE_CONNECTIONS = 8
# SQLite's automatic checkpoint runs inside whichever commit crosses 1,000 WAL pages and fsyncs there (4-5 ms on
# this disk, about one tool round trip in ten); a thread checkpoints instead, off every request's path. The
# automatic one stays, far higher, as the backstop should that thread fall behind.
CHECKPOINT_EVERY_S = 1.0
BACKSTOP_CHECKPOINT_PAGES = 10_000
WAL_SIZE_LIMIT_BYTES = 16 * 1024 * 1024  # what a checkpointed WAL file is cut back to
ALIVE_BYPASS_S = 0.5
IN_BATCH = 500  # ids in one `IN (...)` list (SQLite's default limit of bound parameters is far above)


def is_database_url(target: str | Path) -> bool:
    return str(target).startswith(("postgresql:", "postgresql+psycopg:", "postgres:"))


def batches(items: Sequence[str]) -> Iterator[list[str]]:
    """`items` in lists of at most IN_BATCH, one `IN (...)` query each."""
    items = list(items)
    for start in range(0, len(items), IN_BATCH):
        yield items[start:start + IN_BATCH]


def marks(items: Sequence[Any]) -> str:
    """The `?, ?, ...` of an `IN (...)` list of `items`."""
    return ", ".join("?" * len(items))


class Rows:
    """What one statement of a `Tx` gave: its rows (by position or, with `mappings`, by column name) and the
    number of rows it changed."""

    __slots__ = ("_cursor", "rowcount")

    def __init__(self, cursor: Any) -> None:
        self._cursor, self.rowcount = cursor, cursor.rowcount

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._cursor.fetchone()

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._cursor.fetchall()

    def mappings(self) -> list[dict[str, Any]]:
        return _as_dicts(self._cursor)


def _as_dicts(cursor: Any) -> list[dict[str, Any]]:
    if cursor.description is None:
        return []
    # Interned: the rows a process keeps (a waiting run's session row) share their keys, not a copy per query.
    names = [sys.intern(column[0]) for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


class Tx:
    """One write transaction on a driver connection: `execute` takes the store's `?` placeholders on either
    database."""

    def __init__(self, dbapi_conn: Any, database: Database) -> None:
        self._cursor, self._database = dbapi_conn.cursor(), database

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Rows:
        self._cursor.execute(self._database.sql(sql), tuple(args))
        return Rows(self._cursor)

    def executemany(self, sql: str, rows: list[Sequence[Any]]) -> None:
        if rows:
            self._cursor.executemany(self._database.sql(sql), [tuple(r) for r in rows])

    def lock(self, key: str) -> None:
        """Serialise writers of `key` until the transaction ends (SQLite's BEGIN IMMEDIATE already does)."""
        if self._database.postgres:
            self._cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))


class _NotKnown(Rows):
    """What a statement of a `KeptTx` gives: no rows, its count not known (-1)."""

    def __init__(self) -> None:
        self.rowcount = -1

    def fetchone(self) -> tuple[Any, ...] | None:
        raise TypeError("the statements of write(together=True) read nothing back")

    def fetchall(self) -> list[tuple[Any, ...]]:
        raise TypeError("the statements of write(together=True) read nothing back")

    def mappings(self) -> list[dict[str, Any]]:
        raise TypeError("the statements of write(together=True) read nothing back")


class KeptTx(Tx):
    """The statements of a `write(together=True)` on PostgreSQL, kept to be made one statement when it ends."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Rows:
        if sql.lstrip()[:4].upper() == "WITH":
            raise ValueError("write(together=True) takes no statement with a WITH clause of its own")
        self.statements.append((sql, tuple(args)))
        return _NotKnown()

    def executemany(self, sql: str, rows: list[Sequence[Any]]) -> None:
        for row in rows:
            self.execute(sql, row)

    def lock(self, key: str) -> None:
        raise TypeError("write(together=True) takes no lock: its statements are independent of each other")


def _one_statement(statements: list[tuple[str, tuple[Any, ...]]]) -> tuple[str, tuple[Any, ...]]:
    """`statements` as one: all but the last in a WITH clause (PostgreSQL runs each of them once, in the same
    snapshot)."""
    *first, (last_sql, last_args) = statements
    if not first:
        return last_sql, last_args
    clause = ", ".join(f"w{i} AS ({sql})" for i, (sql, _) in enumerate(first))
    return f"WITH {clause} {last_sql}", tuple(a for _, args in statements for a in args)


class CoreTx:
    """One write transaction on a SQLAlchemy `Connection` (`_conn`), for the migrations and the team library:
    `execute` takes the store's `?` placeholders and answers SQLAlchemy's result."""

    def __init__(self, conn: Connection, database: Database) -> None:
        self._conn, self._database = conn, database

    def execute(self, sql: str, args: Sequence[Any] = ()) -> CursorResult:
        return self._conn.exec_driver_sql(self._database.sql(sql), tuple(args))

    def executemany(self, sql: str, rows: list[Sequence[Any]]) -> None:
        if rows:
            self._conn.exec_driver_sql(self._database.sql(sql), [tuple(r) for r in rows])

    def lock(self, key: str) -> None:
        if self._database.postgres:
            self._conn.exec_driver_sql("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))


class Database:
    def __init__(self, target: str | Path, migrate: bool = True):
        """`target`: a SQLite file path (":memory:" for a throwaway database) or a postgresql:// URL.
        `migrate=False` opens it as it is (for `nexus db current`)."""
        self.path = str(target)
        self.postgres = is_database_url(target)
        self.engine = self._engine()
        # thread (greenlet, under gevent) id -> the write transaction it is inside (a KeptTx: together). Not a
        # threading.local: under gevent a local allocates a dict for every greenlet that merely looks (each waiting
        # run's two).
        self._open: dict[int, Any] = {}
        # Driver connections ready for the next read or write, with when each was last used. ":memory:" keeps
        # none: its pool has exactly one connection, which the migrations and the team library need too.
        self._ready: list[tuple[Any, float]] = []
        self._keep_ready = 0 if self.path == ":memory:" else MAX_IDLE_CONNECTIONS
        self._stop_checkpoints = threading.Event()
        if not self.postgres and self.path != ":memory:":
            threading.Thread(target=_checkpoint_periodically, args=(weakref.ref(self), self._stop_checkpoints),
                             name="sqlite-checkpoint", daemon=True).start()
        if migrate:
            self.migrate()

    def _engine(self) -> Engine:
        if self.postgres:
            url = re.sub(r"^postgres(ql)?(\+psycopg)?:", "postgresql+psycopg:", self.path)
            return create_engine(url, pool_size=MAX_IDLE_CONNECTIONS, max_overflow=-1, pool_pre_ping=True)
        in_memory = self.path == ":memory:"
        if not in_memory:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        # A small pool rather than a connection per thread: a connection holds ~0.3 MB of page cache, and
        # every open stream, run and host socket is a thread (or a greenlet under gevent) of its own.
        # ":memory:" is one database per connection, so it gets exactly one, shared, used by one at a time.
        engine = create_engine("sqlite://" if in_memory else f"sqlite:///{self.path}", poolclass=QueuePool,
                               pool_size=1 if in_memory else MAX_IDLE_CONNECTIONS,
                               max_overflow=0 if in_memory else -1, pool_timeout=60,
                               connect_args={"timeout": 30, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def configure(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # the transactions below are ours, not the driver's
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            # In WAL mode NORMAL never corrupts the database and loses nothing when the process dies; only
            # an OS crash or power cut can drop the last commits. FULL fsyncs every commit, which cost about
            # 0.3 ms of each of the half-dozen writes in a tool round trip.
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_CHECKPOINT_PAGES}")
            cursor.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT_BYTES}")
            cursor.close()

        @event.listens_for(engine, "begin")
        def begin(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.info.get("write") else "BEGIN")

        return engine

    def sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def contains(self, expression: str) -> str:
        """SQL: `expression` (lower-cased) contains the next parameter."""
        return f"strpos(lower({expression}), ?) > 0" if self.postgres else f"instr(lower({expression}), ?) > 0"

    def migrate(self) -> Upgrade:
        """Bring the database to the newest schema revision, in one transaction that several processes
        starting at once on an empty database take in turn (a no-op read when it is there already: Alembic is
        imported only when there is work for it)."""
        with self.engine.connect() as conn:
            before = schema_revision.current(conn)
        if before == schema_revision.head():
            return Upgrade(before, before)
        from cloud import migrations

        with self.core_write() as db:
            db.lock("nexus-schema")
            return migrations.upgrade(db._conn)

    def schema_revision(self) -> str | None:
        """The schema revision the database is at (None: empty, or made before versioned migrations)."""
        with self.engine.connect() as conn:
            return schema_revision.current(conn)

    @contextmanager
    def write(self, together: bool = False) -> Iterator[Tx]:
        """One write transaction: committed when the block ends, rolled back if it raises. A `write` inside
        another on the same thread joins it, so writes of several parts can land in one commit (all or none).
        `together`, for writes independent of each other (plain INSERT, UPDATE or DELETE statements without a
        WITH of their own, none seeing another's change, no row changed twice) whose results nobody reads: on
        PostgreSQL they are kept until the block ends and then made one statement, all but the last in a WITH
        clause (`WITH w1 AS (...), w2 AS (...) last`), its own transaction: one round trip where BEGIN, each
        statement and COMMIT took one each, and a plan the server keeps like any statement's. A statement's row
        count is not known there (-1)."""
        me = threading.get_ident()
        outer = self._open.get(me)
        if outer is not None:
            yield outer if isinstance(outer, KeptTx) else Tx(outer, self)
            return
        if together and self.postgres:
            kept = KeptTx(self)
            self._open[me] = kept
            try:
                yield kept
            finally:
                del self._open[me]
            if kept.statements:
                self.write_one(*_one_statement(kept.statements))
            return
        pooled = self._checkout()
        try:
            dbapi_conn = pooled.dbapi_connection
            if not self.postgres:  # psycopg opens its transaction at the first statement
                dbapi_conn.execute("BEGIN IMMEDIATE")
            self._open[me] = dbapi_conn
            try:
                yield Tx(dbapi_conn, self)
            except BaseException:
                dbapi_conn.rollback()
                raise
            finally:
                del self._open[me]
            dbapi_conn.commit()
        except BaseException:
            pooled.close()  # back to the pool, which resets it (or drops it, if the failure was the connection's)
            raise
        self._checkin(pooled)

    def _checkout(self) -> Any:
        """A driver connection (SQLAlchemy's pooled proxy): a ready one, else one from the pool."""
        try:
            pooled, used = self._ready.pop()
        except IndexError:
            return self.engine.raw_connection()
        if self.postgres and time.monotonic() - used > ALIVE_BYPASS_S:
            pooled.close()
            return self.engine.raw_connection()  # pre-pinged: the server may have gone since
        return pooled

    def _checkin(self, pooled: Any) -> None:
        """A connection whose statements all ended (committed or rolled back): kept ready, or back to the pool."""
        if len(self._ready) < self._keep_ready:
            self._ready.append((pooled, time.monotonic()))
        else:
            pooled.close()

    @contextmanager
    def core_write(self) -> Iterator[CoreTx]:
        """A write transaction on a SQLAlchemy `Connection` (migrations, the team library)."""
        with self.engine.connect() as conn:
            conn.info["write"] = True
            try:
                with conn.begin():
                    yield CoreTx(conn, self)
            finally:
                conn.info.pop("write", None)

    def read(self, sql: str, args: Sequence[Any] = ()) -> list[Mapping[str, Any]]:
        """The rows of one query, in a snapshot of its own (the statement's own transaction on either database)."""
        pooled = self._checkout()
        try:
            with self._alone(pooled.dbapi_connection):
                cursor = pooled.dbapi_connection.cursor()
                cursor.execute(self.sql(sql), tuple(args))
                rows = _as_dicts(cursor)
        except BaseException:
            pooled.close()
            raise
        self._checkin(pooled)
        return rows

    def write_one(self, sql: str, args: Sequence[Any] = ()) -> int:
        """One write statement as a transaction of its own; the rows it changed. Inside a `write` on this thread
        it joins that transaction."""
        kept = self._open.get(threading.get_ident())
        if isinstance(kept, KeptTx):
            return kept.execute(sql, args).rowcount
        if not self.postgres or self.in_write():
            with self.write() as db:
                return db.execute(sql, args).rowcount
        pooled = self._checkout()
        try:
            with self._alone(pooled.dbapi_connection):
                cursor = pooled.dbapi_connection.cursor()
                cursor.execute(self.sql(sql), tuple(args))
                count = cursor.rowcount
        except BaseException:
            pooled.close()
            raise
        self._checkin(pooled)
        return count

    def in_write(self) -> bool:
        """Whether this thread is inside a `write` (whose transaction a statement would join)."""
        return threading.get_ident() in self._open

    @staticmethod
    def is_key_conflict(exc: BaseException) -> bool:
        """Whether a PostgreSQL statement failed on a duplicate primary or unique key (unique_violation)."""
        return getattr(exc, "sqlstate", None) == "23505"

    @contextmanager
    def _alone(self, dbapi_conn: Any) -> Iterator[None]:
        """On PostgreSQL, the statements of the block each commit by themselves (autocommit): one round trip
        each, where psycopg's own transaction would add a BEGIN before and a COMMIT or ROLLBACK after.
        SQLite's connections are in autocommit already (the writes' transactions are ours, see `_engine`)."""
        if not self.postgres:
            yield
            return
        if dbapi_conn.info.transaction_status:  # not idle (0): psycopg refuses the switch inside a transaction
            dbapi_conn.rollback()
        dbapi_conn.autocommit = True
        try:
            yield
        finally:
            # Back to psycopg's transactions, which `write` relies on; a connection that cannot be set back
            # (it broke) is not used again.
            try:
                dbapi_conn.autocommit = False
            except Exception:
                dbapi_conn.close()
                raise

    def return_ready(self) -> None:
        """Hand the connections kept ready back to the pool (each next call checks one out of it again)."""
        while self._ready:
            try:
                pooled, _ = self._ready.pop()
            except IndexError:  # another thread took the last one meanwhile
                return
            pooled.close()

    def close(self) -> None:
        self._stop_checkpoints.set()
        self._keep_ready = 0
        self.return_ready()
        self.engine.dispose()


def _checkpoint_periodically(database: weakref.ref[Database], stop: threading.Event) -> None:
    """Copy the WAL back into the database file every CHECKPOINT_EVERY_S (PASSIVE: never waits for, or blocks,
    a reader or writer), so that no commit pays for it; ends with the Database (closed, or collected)."""
    while not stop.wait(CHECKPOINT_EVERY_S):
        db = database()
        if db is None:
            return
        try:
            with db.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                conn.rollback()
        except Exception:  # a busy or closed database: the next turn (or the backstop) catches up
            pass
        del db
