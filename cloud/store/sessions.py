"""Sessions (who, which host and model, status, the person's choices) and their neutral transcript."""
from __future__ import annotations

import json
import time
import uuid
from typing import Any

from cloud.store.database import Database

TABLES = ("sessions", "messages")
READS = ("usage",)  # a session's cost in the listings, summed from cloud/store/ledger.py's rows
APPEND_ATTEMPTS = 1000  # each lost race is another append that went in: only a flood of writers comes near
UPDATABLE = frozenset({"host_id", "model", "status", "state", "policy", "validation", "ids", "refs", "rules",
                       "bcf_in"})


class Sessions:
    def __init__(self, db: Database) -> None:
        self.db = db

    def create_session(self, user_name: str, host_id: str | None, model: str | None, state: dict[str, Any]) -> str:
        session_id = uuid.uuid4().hex
        now = time.time()
        with self.db.write() as db:
            db.execute("INSERT INTO sessions (id, user_name, host_id, model, created, updated, state) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (session_id, user_name, host_id, model, now, now, json.dumps(state)))
        return session_id

    def count_sessions_since(self, user_name: str, since: float) -> int:
        return self.db.read("SELECT COUNT(*) AS n FROM sessions WHERE user_name = ? AND created >= ?",
                            (user_name, since))[0]["n"]

    def get_session(self, session_id: str) -> dict[str, Any] | None:
        rows = self.db.read("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            return None
        row = dict(rows[0])
        row["state"] = json.loads(row["state"])
        return row

    def update_session(self, session_id: str, **fields: Any) -> None:
        if not fields or set(fields) - UPDATABLE:
            raise ValueError(f"cannot update session fields {sorted(set(fields) - UPDATABLE)}")
        if "state" in fields:
            fields["state"] = json.dumps(fields["state"])
        assignments = ", ".join(f"{k} = ?" for k in fields)
        self.db.write_one(f"UPDATE sessions SET {assignments}, updated = ? WHERE id = ?",
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
            sql += " AND (" + " OR ".join(self.db.contains(f) for f in fields) + ")"
            args.extend([text.lower()] * 4)
        return [dict(r) for r in self.db.read(sql + " ORDER BY s.updated DESC LIMIT ?", (*args, limit))]

    def append_entries(self, session_id: str, entries: list[dict[str, Any]]) -> None:
        if self.db.postgres and not self.db.in_write():
            self._append_in_one_statement(session_id, entries)
            return
        with self.db.write() as db:
            db.lock("messages:" + session_id)
            for entry in entries:  # each numbered after the last in one statement (a round trip less on PostgreSQL)
                db.execute("INSERT INTO messages (session_id, seq, entry) SELECT ?, COALESCE(MAX(seq), -1) + 1, ? "
                           "FROM messages WHERE session_id = ?", (session_id, json.dumps(entry), session_id))
            db.execute("UPDATE sessions SET updated = ? WHERE id = ?", (time.time(), session_id))

    def _append_in_one_statement(self, session_id: str, entries: list[dict[str, Any]]) -> None:
        """PostgreSQL: the entries, numbered after the last, and the session's `updated`, in one statement that
        is its own transaction (one round trip; two appends a tool round trip). Instead of a lock, the key
        (session_id, seq): of two appends numbering from the same last entry, the second fails whole and
        numbers again."""
        # One parameter an entry, not one array: psycopg quotes a list's strings into an array literal itself,
        # about 1 ms for a 2 KB entry (a text parameter is passed as it is).
        array = ", ".join("?" * len(entries))
        for _ in range(APPEND_ATTEMPTS):
            try:
                self.db.write_one(
                    "WITH added AS (INSERT INTO messages (session_id, seq, entry) "
                    "SELECT ?, last.seq + e.n, e.entry FROM (SELECT COALESCE(MAX(seq), -1) AS seq FROM messages "
                    f"WHERE session_id = ?) AS last, unnest(CAST(ARRAY[{array}] AS text[])) WITH ORDINALITY "
                    "AS e(entry, n)) UPDATE sessions SET updated = ? WHERE id = ?",
                    (session_id, session_id, *[json.dumps(e) for e in entries], time.time(), session_id))
                return
            except Exception as exc:
                if not self.db.is_key_conflict(exc):
                    raise
        raise RuntimeError(f"session {session_id}: {APPEND_ATTEMPTS} appends in a row lost the race for the next seq")

    def transcript(self, session_id: str) -> list[dict[str, Any]]:
        return [json.loads(r["entry"]) for r in self.db.read(
            "SELECT entry FROM messages WHERE session_id = ? ORDER BY seq", (session_id,))]
