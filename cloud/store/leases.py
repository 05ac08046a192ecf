"""Run leases: the process driving a session's run holds one and renews it while the run goes on; a lease that
expired means its process died (on any machine) and the run may be taken over (cloud/runs.py)."""
from __future__ import annotations

import time
from typing import Any

from cloud.store.database import Database, batches, marks

TABLES = ("run_leases",)
READS = ("sessions",)  # the running sessions no live lease covers, for the recovery sweep (never written here)


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

    def running_without_live_lease(self, now: float, limit: int) -> list[dict[str, Any]]:
        """The sessions marked running that no live lease covers (id, host_id, and their lease's owner and
        expiry, None without one), most recently updated first: what the recovery sweep looks at, in one
        query whose rows do not grow with the runs that live processes drive."""
        return [dict(r) for r in self.db.read(
            "SELECT s.id, s.host_id, l.owner, l.expires FROM sessions s "
            "LEFT JOIN run_leases l ON l.session_id = s.id "
            "WHERE s.status = 'running' AND (l.expires IS NULL OR l.expires < ?) ORDER BY s.updated DESC LIMIT ?",
            (now, limit))]
