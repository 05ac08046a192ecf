"""Run leases: the process driving a session's run holds one and renews it while the run goes on; a lease that
expired means its process died (on any machine) and the run may be taken over (cloud/runs.py)."""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from cloud.store.database import Database, batches, marks

TABLES = ("run_leases",)


class RunLeases:
    def __init__(self, db: Database) -> None:
        self.db = db

    def acquire_run_lease(self, session_id: str, owner: str, ttl_s: float) -> bool:
        """Take the session's lease for `owner`; False while another owner's lease has not expired."""
        now = time.time()
        # One statement (its own transaction, one round trip on PostgreSQL): a new lease, or the existing one
        # taken over when it is the owner's or has expired; no row changed when another owner still holds it.
        return self.db.write_one(
            "INSERT INTO run_leases (session_id, owner, expires) VALUES (?, ?, ?) ON CONFLICT (session_id) "
            "DO UPDATE SET owner = excluded.owner, expires = excluded.expires "
            "WHERE run_leases.owner = excluded.owner OR run_leases.expires < ?",
            (session_id, owner, now + ttl_s, now)) > 0

    def renew_run_leases(self, session_ids: list[str], owner: str, ttl_s: float) -> list[str]:
        """Extend the owner's leases; returns the ids whose lease this owner no longer holds. A statement per
        IN_BATCH ids, not one per run (a process may drive thousands of waiting runs)."""
        kept: set[str] = set()
        with self.db.write() as db:
            for batch in batches(session_ids):
                db.execute(f"UPDATE run_leases SET expires = ? WHERE owner = ? AND session_id IN ({marks(batch)})",
                           (time.time() + ttl_s, owner, *batch))
                kept.update(r["session_id"] for r in db.execute(
                    f"SELECT session_id FROM run_leases WHERE owner = ? AND session_id IN ({marks(batch)})",
                    (owner, *batch)).mappings())
        return [session_id for session_id in session_ids if session_id not in kept]

    def release_run_lease(self, session_id: str, owner: str) -> None:
        with self.db.write() as db:
            db.execute("DELETE FROM run_leases WHERE session_id = ? AND owner = ?", (session_id, owner))

    def run_lease(self, session_id: str) -> dict[str, Any] | None:
        """The session's lease (owner, expires), or None when no process holds one."""
        rows = self.db.read("SELECT owner, expires FROM run_leases WHERE session_id = ?", (session_id,))
        return dict(rows[0]) if rows else None

    def run_leases(self, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The leases of these sessions (id -> owner, expires; absent: no process holds one), a query per
        IN_BATCH ids."""
        found: dict[str, dict[str, Any]] = {}
        for batch in batches(session_ids):
            rows = self.db.read(f"SELECT session_id, owner, expires FROM run_leases WHERE session_id IN "
                                f"({marks(batch)})", batch)
            found.update({r["session_id"]: {"owner": r["owner"], "expires": r["expires"]} for r in rows})
        return found
