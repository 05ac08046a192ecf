"""Persistence in SQLite: users and hashed tokens, sessions with their neutral transcript, audit log, usage.

Every write takes its own short `BEGIN IMMEDIATE` transaction (Python's default transaction handling
loses updates under threads); nothing holds a transaction across a long-lived stream. Connections come
from a small pool, not one per thread. A PostgreSQL store would implement the same public methods.
"""
from __future__ import annotations

import hashlib
import json
import queue
import secrets
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    name TEXT PRIMARY KEY, is_admin INTEGER NOT NULL DEFAULT 0, policy TEXT NOT NULL DEFAULT 'auto',
    created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY, token_hash TEXT UNIQUE NOT NULL, user_name TEXT NOT NULL REFERENCES users(name),
    created REAL NOT NULL, revoked REAL);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, user_name TEXT NOT NULL, host_id TEXT, model TEXT, created REAL NOT NULL,
    updated REAL NOT NULL, status TEXT NOT NULL DEFAULT 'idle', policy TEXT NOT NULL DEFAULT 'auto',
    state TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL, seq INTEGER NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (session_id, seq));
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, session_id TEXT, tool_call_id TEXT,
    user_name TEXT, host_id TEXT, host_app TEXT, capability_version TEXT, kind TEXT NOT NULL,
    sha256 TEXT NOT NULL, bytes INTEGER NOT NULL, code TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS audit_sha ON audit (sha256);
CREATE TABLE IF NOT EXISTS results (
    session_id TEXT NOT NULL, tool_call_id TEXT NOT NULL, result TEXT NOT NULL,
    PRIMARY KEY (session_id, tool_call_id));
CREATE TABLE IF NOT EXISTS images (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, png BLOB NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, day TEXT NOT NULL, session_id TEXT,
    user_name TEXT, model TEXT, uncached_input INTEGER, cache_read INTEGER, cache_write INTEGER,
    output INTEGER, reasoning INTEGER, cost REAL);
"""

MAX_IDLE_CONNECTIONS = 8


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class User:
    name: str
    is_admin: bool
    policy: str


class Store:
    def __init__(self, path: str | Path):
        self.path = str(path)
        in_memory = self.path == ":memory:"
        if not in_memory:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        # A small pool rather than a connection per thread: a connection holds ~0.3 MB of page cache, and
        # every open stream, run and host socket is a thread (or a greenlet under gevent) of its own.
        # ":memory:" is one database per connection, so it gets exactly one, shared.
        self._idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._max_idle = 1 if in_memory else MAX_IDLE_CONNECTIONS
        self._may_open = not in_memory
        self._idle.put(self._open())
        with self._connection() as conn:
            conn.executescript(SCHEMA)  # executescript manages its own transaction

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        # In WAL mode NORMAL never corrupts the database and loses nothing when the process dies; only
        # an OS crash or power cut can drop the last commits. FULL fsyncs every commit, which cost about
        # 0.3 ms of each of the half-dozen writes in a tool round trip.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        try:
            conn = self._idle.get_nowait() if self._may_open else self._idle.get()
        except queue.Empty:
            conn = self._open()
        try:
            yield conn
        finally:
            if self._idle.qsize() < self._max_idle:
                self._idle.put(conn)
            else:
                conn.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _read(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        with self._connection() as conn:
            return conn.execute(sql, args).fetchall()

    # users and tokens
    def create_token(self, user_name: str, admin: bool = False) -> str:
        token = "nx_" + secrets.token_urlsafe(32)
        now = time.time()
        with self._write() as db:
            db.execute("INSERT OR IGNORE INTO users (name, is_admin, created) VALUES (?, ?, ?)",
                       (user_name, int(admin), now))
            if admin:
                db.execute("UPDATE users SET is_admin = 1 WHERE name = ?", (user_name,))
            db.execute("INSERT INTO tokens (id, token_hash, user_name, created) VALUES (?, ?, ?, ?)",
                       (uuid.uuid4().hex[:12], hash_token(token), user_name, now))
        return token

    def user_for_token(self, token: str) -> User | None:
        rows = self._read(
            "SELECT u.name, u.is_admin, u.policy FROM tokens t JOIN users u ON u.name = t.user_name "
            "WHERE t.token_hash = ? AND t.revoked IS NULL", (hash_token(token),))
        return User(rows[0]["name"], bool(rows[0]["is_admin"]), rows[0]["policy"]) if rows else None

    def list_tokens(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._read(
            "SELECT t.id, t.user_name, t.created, t.revoked, u.is_admin FROM tokens t "
            "JOIN users u ON u.name = t.user_name ORDER BY t.created")]

    def revoke_token(self, token_id: str) -> bool:
        with self._write() as db:
            cur = db.execute("UPDATE tokens SET revoked = ? WHERE id = ? AND revoked IS NULL", (time.time(), token_id))
            return cur.rowcount > 0

    def set_user_policy(self, user_name: str, policy: str) -> bool:
        with self._write() as db:
            return db.execute("UPDATE users SET policy = ? WHERE name = ?", (policy, user_name)).rowcount > 0

    def get_user(self, user_name: str) -> User | None:
        rows = self._read("SELECT name, is_admin, policy FROM users WHERE name = ?", (user_name,))
        return User(rows[0]["name"], bool(rows[0]["is_admin"]), rows[0]["policy"]) if rows else None

    # sessions and transcripts
    def create_session(self, user_name: str, host_id: str | None, model: str | None, state: dict[str, Any]) -> str:
        session_id = uuid.uuid4().hex
        now = time.time()
        with self._write() as db:
            db.execute("INSERT INTO sessions (id, user_name, host_id, model, created, updated, state) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (session_id, user_name, host_id, model, now, now, json.dumps(state)))
        return session_id

    def get_session(self, session_id: str) -> dict[str, Any] | None:
        rows = self._read("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            return None
        row = dict(rows[0])
        row["state"] = json.loads(row["state"])
        return row

    def update_session(self, session_id: str, **fields: Any) -> None:
        allowed = {"host_id", "model", "status", "state", "policy"}
        if not fields or set(fields) - allowed:
            raise ValueError(f"cannot update session fields {sorted(set(fields) - allowed)}")
        if "state" in fields:
            fields["state"] = json.dumps(fields["state"])
        assignments = ", ".join(f"{k} = ?" for k in fields)
        with self._write() as db:
            db.execute(f"UPDATE sessions SET {assignments}, updated = ? WHERE id = ?",
                       (*fields.values(), time.time(), session_id))

    def list_sessions(self, user_name: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
        sql = ("SELECT s.id, s.user_name, s.host_id, s.model, s.created, s.updated, s.status, s.policy, "
               "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS entries, "
               "(SELECT COALESCE(SUM(cost), 0) FROM usage g WHERE g.session_id = s.id) AS cost "
               "FROM sessions s")
        args: tuple = ()
        if user_name is not None:
            sql += " WHERE s.user_name = ?"
            args = (user_name,)
        return [dict(r) for r in self._read(sql + " ORDER BY s.updated DESC LIMIT ?", (*args, limit))]

    def append_entries(self, session_id: str, entries: list[dict[str, Any]]) -> None:
        with self._write() as db:
            (count,) = db.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM messages WHERE session_id = ?",
                                  (session_id,)).fetchone()
            db.executemany("INSERT INTO messages (session_id, seq, entry) VALUES (?, ?, ?)",
                           [(session_id, count + i, json.dumps(e)) for i, e in enumerate(entries)])
            db.execute("UPDATE sessions SET updated = ? WHERE id = ?", (time.time(), session_id))

    def transcript(self, session_id: str) -> list[dict[str, Any]]:
        return [json.loads(r["entry"]) for r in self._read(
            "SELECT entry FROM messages WHERE session_id = ? ORDER BY seq", (session_id,))]

    # the person's full copy of tool results, and images
    def save_result(self, session_id: str, tool_call_id: str, result: dict[str, Any]) -> None:
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO results (session_id, tool_call_id, result) VALUES (?, ?, ?)",
                       (session_id, tool_call_id, json.dumps(result)))

    def get_result(self, session_id: str, tool_call_id: str) -> dict[str, Any] | None:
        rows = self._read("SELECT result FROM results WHERE session_id = ? AND tool_call_id = ?",
                          (session_id, tool_call_id))
        return json.loads(rows[0]["result"]) if rows else None

    def save_image(self, session_id: str, png: bytes) -> str:
        image_id = uuid.uuid4().hex
        with self._write() as db:
            db.execute("INSERT INTO images (id, session_id, png, created) VALUES (?, ?, ?, ?)",
                       (image_id, session_id, png, time.time()))
        return image_id

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

    def audit(self, sha256_prefix: str | None = None, session_id: str | None = None,
              limit: int = 200) -> list[dict[str, Any]]:
        sql, args = "SELECT * FROM audit WHERE 1=1", []
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
