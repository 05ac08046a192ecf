"""Findings per model per check run, counted by severity (cloud/findings_history.py says which runs are recorded
and how the admin console sums them)."""
from __future__ import annotations

from typing import Any

from cloud.store.database import Database

TABLES = ("finding_runs",)
MAX_ROWS = 5000


class FindingRuns:
    def __init__(self, db: Database) -> None:
        self.db = db

    def record_finding_run(self, *, ts: float, day: str, model: str, source: str, check_name: str,
                           user_name: str | None, session_id: str | None, errors: int, warnings: int,
                           infos: int) -> None:
        with self.db.write() as db:
            db.execute("INSERT INTO finding_runs (ts, day, model, source, check_name, user_name, session_id, errors, "
                       "warnings, infos) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (ts, day, model, source, check_name, user_name, session_id, errors, warnings, infos))

    def latest_finding_runs(self, limit: int = 500) -> list[dict[str, Any]]:
        """The latest check runs, newest first."""
        return [dict(r) for r in self.db.read(
            "SELECT ts, day, model, source, check_name, user_name, session_id, errors, warnings, infos "
            "FROM finding_runs ORDER BY ts DESC, id DESC LIMIT ?", (min(limit, MAX_ROWS),))]

    def finding_counts(self) -> list[dict[str, Any]]:
        """Every run's day, model, check and counts, oldest first."""
        return [dict(r) for r in self.db.read(
            "SELECT day, model, check_name, errors, warnings, infos FROM finding_runs ORDER BY ts, id")]
