"""Answers to pending requests (tool results and decisions; cloud/distributed/redis_rendezvous.py): one row per
request, and the insert that wins is the answer, so a second delivery of the same request, from whichever
process, finds the row and is refused."""
from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from cloud.store.database import Database, batches, marks

TABLES = ("deliveries",)
DELIVERY_KEEP_S = 86400.0  # how long a delivery row is kept (its request closed long before)


class Deliveries:
    def __init__(self, db: Database) -> None:
        self.db = db

    def record_delivery(self, session_id: str, pending_id: str, tool_call_id: str, kind: str,
                        result: dict[str, Any]) -> bool:
        """Record the answer to one pending request if it has none: True for the first delivery, False for
        any other (a duplicate, from whichever process). One statement, its own transaction: it is on the
        path of every tool round trip (`forget_old_deliveries` drops the old rows, off that path)."""
        return self.db.write_one("INSERT INTO deliveries (session_id, pending_id, tool_call_id, kind, result, "
                                 "created) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                                 (session_id, pending_id, tool_call_id, kind, json.dumps(result), time.time())) > 0

    def forget_old_deliveries(self, keep_s: float = DELIVERY_KEEP_S) -> int:
        """Drop the rows older than `keep_s` (their requests closed long before); how many went."""
        return self.db.write_one("DELETE FROM deliveries WHERE created < ?", (time.time() - keep_s,))

    def delivery(self, session_id: str, pending_id: str) -> dict[str, Any] | None:
        """The answer recorded for a pending request, or None."""
        rows = self.db.read("SELECT result FROM deliveries WHERE session_id = ? AND pending_id = ?",
                            (session_id, pending_id))
        return json.loads(rows[0]["result"]) if rows else None

    def recorded_deliveries(self, pending: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of these (session_id, pending_id) requests have a recorded answer, a query per IN_BATCH."""
        wanted, found = set(pending), set()
        for batch in batches(sorted({p for _, p in wanted})):
            rows = self.db.read(f"SELECT session_id, pending_id FROM deliveries WHERE pending_id IN ({marks(batch)})",
                                batch)
            found.update((r["session_id"], r["pending_id"]) for r in rows)
        return found & wanted
