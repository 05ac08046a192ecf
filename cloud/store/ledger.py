"""What ran and what it cost: the audit log of every dispatched script (its exact bytes and their sha256) and
the usage of every model turn (tokens by kind, cost)."""
from __future__ import annotations

import time
from typing import Any

from cloud.store.database import Database

TABLES = ("audit", "usage")


class Ledger:
    def __init__(self, db: Database) -> None:
        self.db = db

    def record_scripts(self, rows: list[dict[str, Any]]) -> None:
        """Audit rows of dispatched scripts: session, tool_call_id, user_name, host_id, host_app,
        capability_version, kind (model | epilogue), code and the sha256 of its exact bytes."""
        if not rows:
            return
        now = time.time()
        # One statement for every row: its own transaction, one round trip on PostgreSQL.
        self.db.write_one("INSERT INTO audit (ts, session_id, tool_call_id, user_name, host_id, host_app, "
                          "capability_version, kind, sha256, bytes, code) VALUES "
                          + ", ".join(["(?,?,?,?,?,?,?,?,?,?,?)"] * len(rows)),
                          [value for r in rows for value in (
                              now, r["session_id"], r["tool_call_id"], r["user_name"], r["host_id"], r["host_app"],
                              r["capability_version"], r["kind"], r["sha256"], len(r["code"].encode()), r["code"])])

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
            sql += f" AND {self.db.contains('code')}"
            args.append(text.lower())
        if sha256_prefix:
            sql += " AND sha256 LIKE ?"
            args.append(sha256_prefix.lower() + "%")
        if session_id:
            sql += " AND session_id = ?"
            args.append(session_id)
        return [dict(r) for r in self.db.read(sql + " ORDER BY id DESC LIMIT ?", (*args, limit))]

    def record_usage(self, *, session_id: str, user_name: str, model: str, usage: dict[str, int],
                     cost: float | None) -> None:
        now = time.time()
        self.db.write_one("INSERT INTO usage (ts, day, session_id, user_name, model, uncached_input, cache_read, "
                          "cache_write, output, reasoning, cost) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                          (now, time.strftime("%Y-%m-%d", time.gmtime(now)), session_id, user_name, model,
                           usage.get("uncached_input", 0), usage.get("cache_read", 0), usage.get("cache_write", 0),
                           usage.get("output", 0), usage.get("reasoning", 0), cost))

    def session_usage(self, session_id: str) -> dict[str, Any]:
        row = self.db.read("SELECT COALESCE(SUM(uncached_input),0) uncached_input, COALESCE(SUM(cache_read),0) "
                           "cache_read, COALESCE(SUM(cache_write),0) cache_write, COALESCE(SUM(output),0) output, "
                           "COALESCE(SUM(reasoning),0) reasoning, COALESCE(SUM(cost),0) cost FROM usage "
                           "WHERE session_id = ?", (session_id,))[0]
        return dict(row)

    def usage_summary(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.read(
            "SELECT user_name, model, day, SUM(uncached_input) uncached_input, SUM(cache_read) cache_read, "
            "SUM(cache_write) cache_write, SUM(output) output, SUM(reasoning) reasoning, SUM(cost) cost, "
            "COUNT(*) turns FROM usage GROUP BY user_name, model, day ORDER BY day DESC, user_name, model")]
