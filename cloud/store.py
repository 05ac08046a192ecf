"""Persistence in SQLite or PostgreSQL: users and hashed tokens, sessions with their neutral transcript,
audit log, usage, run leases.

One implementation for both databases on SQLAlchemy Core: the schema comes from versioned Alembic
revisions (cloud/migrations/), run at start under a lock; `metadata` below declares what the newest
revision makes (a test holds the two equal). The queries are plain SQL both dialects read alike, and the few differences (substring search, locking) are chosen per dialect. SQLite stays
the embedded default (a file path); a `postgresql://` URL selects PostgreSQL.

Every write takes its own short transaction: `BEGIN IMMEDIATE` on SQLite (Python's default transaction
handling loses updates under threads), row or advisory locks on PostgreSQL where a write reads first.
Nothing holds a transaction across a long-lived stream. Connections come from a small pool.
"""
from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    Double,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    create_engine,
    event,
)
from sqlalchemy.engine import Connection, CursorResult, Engine
from sqlalchemy.pool import QueuePool

from cloud import migrations
from cloud.migrations import Upgrade

metadata = MetaData()


def _text(name: str, **kw: Any) -> Column:
    return Column(name, Text, **kw)


def _real(name: str, **kw: Any) -> Column:
    return Column(name, Double, **kw)


Table("users", metadata, _text("name", primary_key=True),
      Column("is_admin", Integer, nullable=False, server_default="0"),
      _text("policy", nullable=False, server_default="auto"), _real("created", nullable=False),
      _text("validation", nullable=False, server_default="warn"))
Table("tokens", metadata, _text("id", primary_key=True), _text("token_hash", unique=True, nullable=False),
      _text("user_name", nullable=False), _real("created", nullable=False), _real("revoked"),
      Column("is_admin", Integer, nullable=False, server_default="0"),
      _text("scope", nullable=False, server_default="user"))
Table("web_sessions", metadata, _text("id_hash", primary_key=True), _text("token_id", nullable=False),
      _real("created", nullable=False), _real("expires", nullable=False), _real("revoked"))
Table("signin_codes", metadata, _text("code_hash", primary_key=True), _text("token_id", nullable=False),
      _real("expires", nullable=False), _real("used"))
Table("host_owners", metadata, _text("host_id", primary_key=True), _text("user_name", nullable=False),
      _real("first_seen", nullable=False), _real("last_seen", nullable=False))
Table("sessions", metadata, _text("id", primary_key=True), _text("user_name", nullable=False), _text("host_id"),
      _text("model"), _real("created", nullable=False), _real("updated", nullable=False),
      _text("status", nullable=False, server_default="idle"), _text("policy", nullable=False, server_default="auto"),
      _text("state", nullable=False, server_default="{}"),
      _text("validation", nullable=False, server_default="warn"), _text("ids"), _text("refs"), _text("rules"),
      _text("bcf_in"),
      Index("sessions_user", "user_name", "created"))
Table("messages", metadata, _text("session_id", primary_key=True), Column("seq", Integer, primary_key=True),
      _text("entry", nullable=False))
Table("audit", metadata, Column("id", Integer, primary_key=True, autoincrement=True), _real("ts", nullable=False),
      _text("session_id"), _text("tool_call_id"), _text("user_name"), _text("host_id"), _text("host_app"),
      _text("capability_version"), _text("kind", nullable=False), _text("sha256", nullable=False),
      Column("bytes", Integer, nullable=False), _text("code", nullable=False), Index("audit_sha", "sha256"),
      sqlite_autoincrement=True)
Table("results", metadata, _text("session_id", primary_key=True), _text("tool_call_id", primary_key=True),
      _text("result", nullable=False))
Table("images", metadata, _text("id", primary_key=True), _text("session_id", nullable=False),
      Column("png", LargeBinary, nullable=False), _real("created", nullable=False))
Table("usage", metadata, Column("id", Integer, primary_key=True, autoincrement=True), _real("ts", nullable=False),
      _text("day", nullable=False), _text("session_id"), _text("user_name"), _text("model"),
      Column("uncached_input", Integer), Column("cache_read", Integer), Column("cache_write", Integer),
      Column("output", Integer), Column("reasoning", Integer), _real("cost"), sqlite_autoincrement=True)
Table("run_leases", metadata, _text("session_id", primary_key=True), _text("owner", nullable=False),
      _real("expires", nullable=False))
# The team library of skills (cloud/skills/): teams an admin defines, skills, immutable versions, runs.
Table("team_members", metadata, _text("user_name", primary_key=True), _text("team", nullable=False),
      Column("can_edit", Integer, nullable=False, server_default="1"), _real("added", nullable=False))
Table("skills", metadata, _text("id", primary_key=True), _text("team", nullable=False), _text("name", nullable=False),
      _text("description", nullable=False), _text("host_app", nullable=False),
      Column("portable", Integer, nullable=False, server_default="0"), _text("created_by", nullable=False),
      _real("created", nullable=False), Column("is_check", Integer, nullable=False, server_default="0"),
      Index("skills_team_name", "team", "name", unique=True))
Table("skill_versions", metadata, _text("skill_id", primary_key=True), Column("version", Integer, primary_key=True),
      _text("code", nullable=False), _text("sha256", nullable=False), _text("parameters", nullable=False),
      _text("capability_version"), _text("provenance", nullable=False), _text("example", nullable=False),
      _text("created_by", nullable=False), _real("created", nullable=False))
Table("skill_runs", metadata, Column("id", Integer, primary_key=True, autoincrement=True),
      _text("skill_id", nullable=False), Column("version", Integer, nullable=False), _real("ts", nullable=False),
      _text("user_name", nullable=False), _text("session_id"), Column("ok", Integer, nullable=False),
      _text("error"), Index("skill_runs_skill", "skill_id", "ts"), sqlite_autoincrement=True)

# Tool results and decisions answered, one row per pending request: the insert that wins is the answer
# (cloud/distributed/rendezvous.py); a second delivery of the same request finds the row and is refused.
Table("deliveries", metadata, _text("session_id", primary_key=True), _text("pending_id", primary_key=True),
      _text("tool_call_id", nullable=False), _text("kind", nullable=False), _text("result", nullable=False),
      _real("created", nullable=False), Index("deliveries_created", "created"))
# Project folders under the batch root shared with teams (cloud/batch/folders.py): one row per folder and team.
Table("folder_grants", metadata, _text("folder", primary_key=True), _text("team", primary_key=True),
      _text("access", nullable=False), _text("granted_by", nullable=False), _real("granted", nullable=False))
FOLDER_ACCESS = ("read", "read-write")
# Rule sets saved per team (ifc_host/rules.py documents, as JSON): checks with a severity each.
Table("rule_sets", metadata, _text("team", primary_key=True), _text("name", primary_key=True),
      _text("document", nullable=False), _text("saved_by", nullable=False), _real("saved", nullable=False))
# Findings per model per check run, counted by severity (cloud/findings_history.py holds its queries).
Table("finding_runs", metadata, Column("id", Integer, primary_key=True, autoincrement=True), _real("ts", nullable=False),
      _text("day", nullable=False), _text("model", nullable=False), _text("source", nullable=False),
      _text("check_name", nullable=False), _text("user_name"), _text("session_id"),
      Column("errors", Integer, nullable=False), Column("warnings", Integer, nullable=False),
      Column("infos", Integer, nullable=False), Index("finding_runs_day", "day"), sqlite_autoincrement=True)

DELIVERY_KEEP_S = 86400.0  # how long a delivery row is kept (its request closed long before)
MAX_IDLE_CONNECTIONS = 8
IN_BATCH = 500  # ids in one `IN (...)` list (SQLite's default limit of bound parameters is far above)
TOKEN_SCOPES = ("user", "host")  # a host token can connect a host runtime and nothing else
USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")  # shown in pages and logs: no spaces or controls


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def is_database_url(target: str | Path) -> bool:
    return str(target).startswith(("postgresql:", "postgresql+psycopg:", "postgres:"))


@dataclass(frozen=True)
class User:
    """Who a request acts for. `is_admin` and `scope` belong to the token (or web session) presented."""

    name: str
    is_admin: bool
    policy: str
    token_id: str | None = None
    scope: str = "user"


def _user(row: Mapping[str, Any]) -> User:
    return User(row["name"], bool(row["is_admin"]), row["policy"], row["token_id"], row["scope"])


_USER_COLUMNS = "u.name, t.is_admin, u.policy, t.id AS token_id, t.scope"


class _Tx:
    """One write transaction: `execute` takes the store's `?` placeholders on either database."""

    def __init__(self, conn: Connection, store: Store) -> None:
        self._conn, self._store = conn, store

    def execute(self, sql: str, args: Sequence[Any] = ()) -> CursorResult:
        return self._conn.exec_driver_sql(self._store._sql(sql), tuple(args))

    def executemany(self, sql: str, rows: list[Sequence[Any]]) -> None:
        if rows:
            self._conn.exec_driver_sql(self._store._sql(sql), [tuple(r) for r in rows])

    def lock(self, key: str) -> None:
        """Serialise writers of `key` until the transaction ends (SQLite's BEGIN IMMEDIATE already does)."""
        if self._store.postgres:
            self._conn.exec_driver_sql("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))


def _batches(items: Sequence[str]) -> Iterator[list[str]]:
    items = list(items)
    for start in range(0, len(items), IN_BATCH):
        yield items[start:start + IN_BATCH]


class Store:
    def __init__(self, target: str | Path, migrate: bool = True):
        """`target`: a SQLite file path (":memory:" for a throwaway database) or a postgresql:// URL.
        `migrate=False` opens it as it is (for `nexus db current`)."""
        self.path = str(target)
        self.postgres = is_database_url(target)
        self.engine = self._engine()
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
            cursor.close()

        @event.listens_for(engine, "begin")
        def begin(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.info.get("write") else "BEGIN")

        return engine

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def _contains(self, expression: str) -> str:
        """SQL: `expression` (lower-cased) contains the next parameter."""
        return f"strpos(lower({expression}), ?) > 0" if self.postgres else f"instr(lower({expression}), ?) > 0"

    def migrate(self) -> Upgrade:
        """Bring the database to the newest schema revision, in one transaction that several processes
        starting at once on an empty database take in turn (a no-op read when it is there already)."""
        with self.engine.connect() as conn:
            before = migrations.current(conn)
        if before == migrations.head():
            return migrations.Upgrade(before, before)
        with self._write() as db:
            db.lock("nexus-schema")
            return migrations.upgrade(db._conn)

    def schema_revision(self) -> str | None:
        """The schema revision the database is at (None: empty, or made before versioned migrations)."""
        with self.engine.connect() as conn:
            return migrations.current(conn)

    @contextmanager
    def _write(self) -> Iterator[_Tx]:
        with self.engine.connect() as conn:
            conn.info["write"] = True
            try:
                with conn.begin():
                    yield _Tx(conn, self)
            finally:
                conn.info.pop("write", None)

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Mapping[str, Any]]:
        with self.engine.connect() as conn:
            return list(conn.exec_driver_sql(self._sql(sql), tuple(args)).mappings().all())

    def close(self) -> None:
        self.engine.dispose()

    # users and tokens
    def create_token(self, user_name: str, admin: bool = False, scope: str = "user") -> str:
        """A new token for user_name (created on first use). Admin rights belong to this token only."""
        if not USER_NAME.fullmatch(user_name):
            raise ValueError("a user name is 1-64 letters, digits or . _ @ + - (starting with a letter or digit)")
        if scope not in TOKEN_SCOPES:
            raise ValueError(f"token scope must be one of {TOKEN_SCOPES}")
        if admin and scope != "user":
            raise ValueError("a host token cannot be an admin token")
        token = "nx_" + secrets.token_urlsafe(32)
        now = time.time()
        with self._write() as db:
            db.execute("INSERT INTO users (name, created) VALUES (?, ?) ON CONFLICT DO NOTHING", (user_name, now))
            db.execute("INSERT INTO tokens (id, token_hash, user_name, created, is_admin, scope) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (uuid.uuid4().hex[:12], hash_token(token), user_name, now, int(admin), scope))
        return token

    def user_for_token(self, token: str) -> User | None:
        rows = self._read(f"SELECT {_USER_COLUMNS} FROM tokens t JOIN users u ON u.name = t.user_name "
                          "WHERE t.token_hash = ? AND t.revoked IS NULL", (hash_token(token),))
        return _user(rows[0]) if rows else None

    def token_id(self, token: str) -> str | None:
        """The id of a token (to revoke it later), revoked or not; None for a token never issued here."""
        rows = self._read("SELECT id FROM tokens WHERE token_hash = ?", (hash_token(token),))
        return rows[0]["id"] if rows else None

    def token_active(self, token_id: str) -> bool:
        return bool(self._read("SELECT 1 FROM tokens WHERE id = ? AND revoked IS NULL", (token_id,)))

    def list_tokens(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._read(
            "SELECT id, user_name, created, revoked, is_admin, scope FROM tokens ORDER BY created")]

    def revoke_token(self, token_id: str) -> bool:
        """Revoke a token; the web sessions signed in with it end with it."""
        now = time.time()
        with self._write() as db:
            cur = db.execute("UPDATE tokens SET revoked = ? WHERE id = ? AND revoked IS NULL", (now, token_id))
            db.execute("UPDATE web_sessions SET revoked = ? WHERE token_id = ? AND revoked IS NULL", (now, token_id))
            return cur.rowcount > 0

    def set_token_admin(self, token_id: str, admin: bool) -> bool:
        """Promote or demote one active user token (host tokens are never admin)."""
        with self._write() as db:
            return db.execute("UPDATE tokens SET is_admin = ? WHERE id = ? AND revoked IS NULL AND scope = 'user'",
                              (int(admin), token_id)).rowcount > 0

    def policies(self, session_id: str, user_name: str) -> tuple[str | None, str | None]:
        """The session's run policy and the user's (None where there is no such row), in one query: an
        automation reads both before it runs and again before it commits."""
        rows = self._read("SELECT (SELECT policy FROM sessions WHERE id = ?) AS session_policy, "
                          "(SELECT policy FROM users WHERE name = ?) AS user_policy", (session_id, user_name))
        return rows[0]["session_policy"], rows[0]["user_policy"]

    def admin_users(self) -> set[str]:
        """Users holding at least one active admin token."""
        return {r["user_name"] for r in self._read(
            "SELECT DISTINCT user_name FROM tokens WHERE is_admin = 1 AND revoked IS NULL")}

    # browser sign-in: a web session id in the cookie, never the token itself
    def create_web_session(self, token_id: str, ttl_s: float) -> str:
        session_id = "ws_" + secrets.token_urlsafe(32)
        now = time.time()
        with self._write() as db:
            db.execute("INSERT INTO web_sessions (id_hash, token_id, created, expires) VALUES (?, ?, ?, ?)",
                       (hash_token(session_id), token_id, now, now + ttl_s))
        return session_id

    def user_for_web_session(self, session_id: str) -> User | None:
        rows = self._read(
            f"SELECT {_USER_COLUMNS} FROM web_sessions w JOIN tokens t ON t.id = w.token_id "
            "JOIN users u ON u.name = t.user_name WHERE w.id_hash = ? AND w.revoked IS NULL AND w.expires > ? "
            "AND t.revoked IS NULL", (hash_token(session_id), time.time()))
        return _user(rows[0]) if rows else None

    def end_web_session(self, session_id: str) -> None:
        now = time.time()
        with self._write() as db:
            db.execute("UPDATE web_sessions SET revoked = ? WHERE id_hash = ? AND revoked IS NULL",
                       (now, hash_token(session_id)))
            db.execute("DELETE FROM web_sessions WHERE expires < ?", (now - 86400,))

    def create_signin_code(self, token: str, ttl_s: float = 86400.0) -> str:
        """A one-time code that signs a browser in with `token` (the demo's link; the token stays off URLs)."""
        rows = self._read("SELECT id FROM tokens WHERE token_hash = ? AND revoked IS NULL", (hash_token(token),))
        if not rows:
            raise ValueError("no active token to make a sign-in code for")
        code = "sc_" + secrets.token_urlsafe(24)
        with self._write() as db:
            db.execute("INSERT INTO signin_codes (code_hash, token_id, expires) VALUES (?, ?, ?)",
                       (hash_token(code), rows[0]["id"], time.time() + ttl_s))
        return code

    def redeem_signin_code(self, code: str) -> str | None:
        """The token id a one-time code stands for, once; None when unknown, used, expired or revoked."""
        now = time.time()
        with self._write() as db:
            # The update is the check: of two redemptions at once, only one changes the row.
            used = db.execute("UPDATE signin_codes SET used = ? WHERE code_hash = ? AND used IS NULL AND expires > ? "
                              "AND token_id IN (SELECT id FROM tokens WHERE revoked IS NULL)",
                              (now, hash_token(code), now)).rowcount
            if not used:
                return None
            return db.execute("SELECT token_id FROM signin_codes WHERE code_hash = ?",
                              (hash_token(code),)).fetchone()[0]

    # host ownership outlives a server restart: a host id is its first user's for good
    def claim_host(self, host_id: str, user_name: str) -> bool:
        """Record user_name as the owner of host_id; False when another user owns it."""
        now = time.time()
        with self._write() as db:
            db.execute("INSERT INTO host_owners (host_id, user_name, first_seen, last_seen) "
                       "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING", (host_id, user_name, now, now))
            return db.execute("UPDATE host_owners SET last_seen = ? WHERE host_id = ? AND user_name = ?",
                              (now, host_id, user_name)).rowcount > 0

    def host_owner(self, host_id: str) -> str | None:
        rows = self._read("SELECT user_name FROM host_owners WHERE host_id = ?", (host_id,))
        return rows[0]["user_name"] if rows else None

    def set_user_policy(self, user_name: str, policy: str) -> bool:
        with self._write() as db:
            return db.execute("UPDATE users SET policy = ? WHERE name = ?", (policy, user_name)).rowcount > 0

    def set_user_validation(self, user_name: str, validation: str) -> bool:
        with self._write() as db:
            return db.execute("UPDATE users SET validation = ? WHERE name = ?",
                              (validation, user_name)).rowcount > 0

    def user_validation(self, user_name: str) -> str | None:
        rows = self._read("SELECT validation FROM users WHERE name = ?", (user_name,))
        return rows[0]["validation"] if rows else None

    def get_user(self, user_name: str) -> User | None:
        """The user's record; is_admin says whether they hold any active admin token."""
        rows = self._read("SELECT name, policy FROM users WHERE name = ?", (user_name,))
        return User(rows[0]["name"], user_name in self.admin_users(), rows[0]["policy"]) if rows else None

    # project folders shared with teams: read or read-write (cloud/batch/folders.py enforces them)
    def grant_folder(self, folder: str, team: str, access: str, by: str) -> None:
        if access not in FOLDER_ACCESS:
            raise ValueError(f"access: one of {FOLDER_ACCESS}")
        with self._write() as db:
            db.execute("INSERT INTO folder_grants (folder, team, access, granted_by, granted) VALUES (?, ?, ?, ?, ?) "
                       "ON CONFLICT (folder, team) DO UPDATE SET access = excluded.access, "
                       "granted_by = excluded.granted_by, granted = excluded.granted",
                       (folder, team, access, by, time.time()))

    def revoke_folder(self, folder: str, team: str) -> bool:
        with self._write() as db:
            return db.execute("DELETE FROM folder_grants WHERE folder = ? AND team = ?",
                              (folder, team)).rowcount > 0

    def folder_grants(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._read(
            "SELECT folder, team, access, granted_by, granted FROM folder_grants ORDER BY folder, team")]

    def folder_access(self, teams: Sequence[str]) -> dict[str, str]:
        """Project folder -> "read" | "read-write": the strongest grant to any of `teams`."""
        found: dict[str, str] = {}
        for team in teams:
            for row in self._read("SELECT folder, access FROM folder_grants WHERE team = ?", (team,)):
                if found.get(row["folder"]) != "read-write":
                    found[row["folder"]] = row["access"]
        return found

    # rule sets saved per team (cloud/rule_sets.py checks them and the team's rights)
    def save_rule_set(self, team: str, name: str, document: str, by: str) -> None:
        with self._write() as db:
            db.execute("INSERT INTO rule_sets (team, name, document, saved_by, saved) VALUES (?, ?, ?, ?, ?) "
                       "ON CONFLICT (team, name) DO UPDATE SET document = excluded.document, "
                       "saved_by = excluded.saved_by, saved = excluded.saved", (team, name, document, by, time.time()))

    def rule_sets(self, team: str) -> list[dict[str, Any]]:
        return [dict(r) for r in self._read(
            "SELECT name, document, saved_by, saved FROM rule_sets WHERE team = ? ORDER BY name", (team,))]

    def rule_set(self, team: str, name: str) -> dict[str, Any] | None:
        rows = self._read("SELECT name, document, saved_by, saved FROM rule_sets WHERE team = ? AND name = ?",
                          (team, name))
        return dict(rows[0]) if rows else None

    def delete_rule_set(self, team: str, name: str) -> bool:
        with self._write() as db:
            return db.execute("DELETE FROM rule_sets WHERE team = ? AND name = ?", (team, name)).rowcount > 0

    # sessions and transcripts
    def create_session(self, user_name: str, host_id: str | None, model: str | None, state: dict[str, Any]) -> str:
        session_id = uuid.uuid4().hex
        now = time.time()
        with self._write() as db:
            db.execute("INSERT INTO sessions (id, user_name, host_id, model, created, updated, state) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (session_id, user_name, host_id, model, now, now, json.dumps(state)))
        return session_id

    def count_sessions_since(self, user_name: str, since: float) -> int:
        return self._read("SELECT COUNT(*) AS n FROM sessions WHERE user_name = ? AND created >= ?",
                          (user_name, since))[0]["n"]

    def get_session(self, session_id: str) -> dict[str, Any] | None:
        rows = self._read("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            return None
        row = dict(rows[0])
        row["state"] = json.loads(row["state"])
        return row

    def update_session(self, session_id: str, **fields: Any) -> None:
        allowed = {"host_id", "model", "status", "state", "policy", "validation", "ids", "refs", "rules", "bcf_in"}
        if not fields or set(fields) - allowed:
            raise ValueError(f"cannot update session fields {sorted(set(fields) - allowed)}")
        if "state" in fields:
            fields["state"] = json.dumps(fields["state"])
        assignments = ", ".join(f"{k} = ?" for k in fields)
        with self._write() as db:
            db.execute(f"UPDATE sessions SET {assignments}, updated = ? WHERE id = ?",
                       (*fields.values(), time.time(), session_id))

    def list_sessions(self, user_name: str | None = None, limit: int = 200, status: str | None = None,
                      text: str | None = None) -> list[dict[str, Any]]:
        """Latest first; `text` matches part of the id, user, model or host id (case-insensitive)."""
        sql = ("SELECT s.id, s.user_name, s.host_id, s.model, s.created, s.updated, s.status, s.policy, "
               "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS entries, "
               "(SELECT COALESCE(SUM(cost), 0) FROM usage g WHERE g.session_id = s.id) AS cost "
               "FROM sessions s WHERE 1=1")
        args: list[Any] = []
        if user_name is not None:
            sql += " AND s.user_name = ?"
            args.append(user_name)
        if status:
            sql += " AND s.status = ?"
            args.append(status)
        if text:
            fields = ("s.id", "s.user_name", "COALESCE(s.model, '')", "COALESCE(s.host_id, '')")
            sql += " AND (" + " OR ".join(self._contains(f) for f in fields) + ")"
            args.extend([text.lower()] * 4)
        return [dict(r) for r in self._read(sql + " ORDER BY s.updated DESC LIMIT ?", (*args, limit))]

    def append_entries(self, session_id: str, entries: list[dict[str, Any]]) -> None:
        with self._write() as db:
            db.lock("messages:" + session_id)
            (count,) = db.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM messages WHERE session_id = ?",
                                  (session_id,)).fetchone()
            db.executemany("INSERT INTO messages (session_id, seq, entry) VALUES (?, ?, ?)",
                           [(session_id, count + i, json.dumps(e)) for i, e in enumerate(entries)])
            db.execute("UPDATE sessions SET updated = ? WHERE id = ?", (time.time(), session_id))

    def transcript(self, session_id: str) -> list[dict[str, Any]]:
        return [json.loads(r["entry"]) for r in self._read(
            "SELECT entry FROM messages WHERE session_id = ? ORDER BY seq", (session_id,))]

    # run leases: the process driving a session's run holds one and renews it while the run goes on; a
    # lease that expired means its process died (on any machine) and the run may be taken over
    def acquire_run_lease(self, session_id: str, owner: str, ttl_s: float) -> bool:
        """Take the session's lease for `owner`; False while another owner's lease has not expired."""
        now = time.time()
        with self._write() as db:
            db.execute("INSERT INTO run_leases (session_id, owner, expires) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                       (session_id, owner, now + ttl_s))
            return db.execute("UPDATE run_leases SET owner = ?, expires = ? WHERE session_id = ? "
                              "AND (owner = ? OR expires < ?)",
                              (owner, now + ttl_s, session_id, owner, now)).rowcount > 0

    def renew_run_leases(self, session_ids: list[str], owner: str, ttl_s: float) -> list[str]:
        """Extend the owner's leases; returns the ids whose lease this owner no longer holds. A statement per
        IN_BATCH ids, not one per run (a process may drive thousands of waiting runs)."""
        kept: set[str] = set()
        with self._write() as db:
            for batch in _batches(session_ids):
                marks = ", ".join("?" * len(batch))
                db.execute(f"UPDATE run_leases SET expires = ? WHERE owner = ? AND session_id IN ({marks})",
                           (time.time() + ttl_s, owner, *batch))
                kept.update(r["session_id"] for r in db.execute(
                    f"SELECT session_id FROM run_leases WHERE owner = ? AND session_id IN ({marks})",
                    (owner, *batch)).mappings())
        return [session_id for session_id in session_ids if session_id not in kept]

    def release_run_lease(self, session_id: str, owner: str) -> None:
        with self._write() as db:
            db.execute("DELETE FROM run_leases WHERE session_id = ? AND owner = ?", (session_id, owner))

    def run_lease(self, session_id: str) -> dict[str, Any] | None:
        """The session's lease (owner, expires), or None when no process holds one."""
        rows = self._read("SELECT owner, expires FROM run_leases WHERE session_id = ?", (session_id,))
        return dict(rows[0]) if rows else None

    def run_leases(self, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The leases of these sessions (id -> owner, expires; absent: no process holds one), a query per
        IN_BATCH ids."""
        found: dict[str, dict[str, Any]] = {}
        for batch in _batches(session_ids):
            rows = self._read(f"SELECT session_id, owner, expires FROM run_leases WHERE session_id IN "
                              f"({', '.join('?' * len(batch))})", batch)
            found.update({r["session_id"]: {"owner": r["owner"], "expires": r["expires"]} for r in rows})
        return found

    # the person's full copy of tool results, and images
    def save_result(self, session_id: str, tool_call_id: str, result: dict[str, Any]) -> None:
        """The person's copy of a tool call's result, written by the process driving the run (the answer
        it was made from was applied once: see record_delivery)."""
        with self._write() as db:
            db.execute("INSERT INTO results (session_id, tool_call_id, result) VALUES (?, ?, ?) "
                       "ON CONFLICT (session_id, tool_call_id) DO UPDATE SET result = excluded.result",
                       (session_id, tool_call_id, json.dumps(result)))

    def results_with_prefix(self, session_id: str, prefix: str) -> list[tuple[str, dict[str, Any]]]:
        """(tool call id, result) of the session's results whose id starts with `prefix` (letters, digits and
        `-` only: no LIKE wildcards), in id order."""
        if not re.fullmatch(r"[A-Za-z0-9-]+", prefix):
            raise ValueError("prefix: letters, digits and - only")
        rows = self._read("SELECT tool_call_id, result FROM results WHERE session_id = ? AND tool_call_id LIKE ? "
                          "ORDER BY tool_call_id", (session_id, prefix + "%"))
        return [(r["tool_call_id"], json.loads(r["result"])) for r in rows]

    def get_result(self, session_id: str, tool_call_id: str) -> dict[str, Any] | None:
        rows = self._read("SELECT result FROM results WHERE session_id = ? AND tool_call_id = ?",
                          (session_id, tool_call_id))
        return json.loads(rows[0]["result"]) if rows else None

    # answers to pending requests (cloud/distributed/rendezvous.py): the row is the record, its key the gate
    def record_delivery(self, session_id: str, pending_id: str, tool_call_id: str, kind: str,
                        result: dict[str, Any]) -> bool:
        """Record the answer to one pending request if it has none: True for the first delivery, False for
        any other (a duplicate, from whichever process); rows older than a day are dropped."""
        now = time.time()
        with self._write() as db:
            inserted = db.execute("INSERT INTO deliveries (session_id, pending_id, tool_call_id, kind, result, "
                                  "created) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                                  (session_id, pending_id, tool_call_id, kind, json.dumps(result), now)).rowcount > 0
            if inserted:
                db.execute("DELETE FROM deliveries WHERE created < ?", (now - DELIVERY_KEEP_S,))
        return inserted

    def delivery(self, session_id: str, pending_id: str) -> dict[str, Any] | None:
        """The answer recorded for a pending request, or None."""
        rows = self._read("SELECT result FROM deliveries WHERE session_id = ? AND pending_id = ?",
                          (session_id, pending_id))
        return json.loads(rows[0]["result"]) if rows else None

    def recorded_deliveries(self, pending: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of these (session_id, pending_id) requests have a recorded answer, a query per IN_BATCH."""
        wanted, found = set(pending), set()
        for batch in _batches(sorted({p for _, p in wanted})):
            rows = self._read(f"SELECT session_id, pending_id FROM deliveries WHERE pending_id IN "
                              f"({', '.join('?' * len(batch))})", batch)
            found.update((r["session_id"], r["pending_id"]) for r in rows)
        return found & wanted

    def save_image(self, session_id: str, png: bytes) -> str:
        image_id = uuid.uuid4().hex
        with self._write() as db:
            db.execute("INSERT INTO images (id, session_id, png, created) VALUES (?, ?, ?, ?)",
                       (image_id, session_id, png, time.time()))
        return image_id

    def list_images(self, session_id: str) -> list[dict[str, Any]]:
        return [dict(r) for r in self._read(
            "SELECT id AS image_id, created, length(png) AS bytes FROM images WHERE session_id = ? ORDER BY created",
            (session_id,))]

    def get_image(self, session_id: str, image_id: str) -> bytes | None:
        rows = self._read("SELECT png FROM images WHERE id = ? AND session_id = ?", (image_id, session_id))
        return bytes(rows[0]["png"]) if rows else None

    # audit and usage
    def record_scripts(self, rows: list[dict[str, Any]]) -> None:
        """Audit rows of dispatched scripts: session, tool_call_id, user_name, host_id, host_app,
        capability_version, kind (model | epilogue), code and the sha256 of its exact bytes."""
        now = time.time()
        with self._write() as db:
            db.executemany("INSERT INTO audit (ts, session_id, tool_call_id, user_name, host_id, host_app, "
                           "capability_version, kind, sha256, bytes, code) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                           [(now, r["session_id"], r["tool_call_id"], r["user_name"], r["host_id"], r["host_app"],
                             r["capability_version"], r["kind"], r["sha256"], len(r["code"].encode()), r["code"])
                            for r in rows])

    def audit(self, sha256_prefix: str | None = None, session_id: str | None = None, limit: int = 200,
              user_name: str | None = None, kind: str | None = None, text: str | None = None) -> list[dict[str, Any]]:
        """Latest first; `text` matches part of the script's code (case-insensitive)."""
        sql, args = "SELECT * FROM audit WHERE 1=1", []
        if user_name:
            sql += " AND user_name = ?"
            args.append(user_name)
        if kind:
            sql += " AND kind = ?"
            args.append(kind)
        if text:
            sql += f" AND {self._contains('code')}"
            args.append(text.lower())
        if sha256_prefix:
            sql += " AND sha256 LIKE ?"
            args.append(sha256_prefix.lower() + "%")
        if session_id:
            sql += " AND session_id = ?"
            args.append(session_id)
        return [dict(r) for r in self._read(sql + " ORDER BY id DESC LIMIT ?", (*args, limit))]

    def record_usage(self, *, session_id: str, user_name: str, model: str, usage: dict[str, int],
                     cost: float | None) -> None:
        now = time.time()
        with self._write() as db:
            db.execute("INSERT INTO usage (ts, day, session_id, user_name, model, uncached_input, cache_read, "
                       "cache_write, output, reasoning, cost) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                       (now, time.strftime("%Y-%m-%d", time.gmtime(now)), session_id, user_name, model,
                        usage.get("uncached_input", 0), usage.get("cache_read", 0), usage.get("cache_write", 0),
                        usage.get("output", 0), usage.get("reasoning", 0), cost))

    def session_usage(self, session_id: str) -> dict[str, Any]:
        row = self._read("SELECT COALESCE(SUM(uncached_input),0) uncached_input, COALESCE(SUM(cache_read),0) "
                         "cache_read, COALESCE(SUM(cache_write),0) cache_write, COALESCE(SUM(output),0) output, "
                         "COALESCE(SUM(reasoning),0) reasoning, COALESCE(SUM(cost),0) cost FROM usage "
                         "WHERE session_id = ?", (session_id,))[0]
        return dict(row)

    def usage_summary(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._read(
            "SELECT user_name, model, day, SUM(uncached_input) uncached_input, SUM(cache_read) cache_read, "
            "SUM(cache_write) cache_write, SUM(output) output, SUM(reasoning) reasoning, SUM(cost) cost, "
            "COUNT(*) turns FROM usage GROUP BY user_name, model, day ORDER BY day DESC, user_name, model")]
