"""Rule sets saved per team (ifc_host/rule_set.py documents, as JSON); cloud/rule_sets.py checks them and the
team's rights before they reach this part."""
from __future__ import annotations

import time
from typing import Any

from cloud.store.database import Database

TABLES = ("rule_sets",)


class RuleSets:
    def __init__(self, db: Database) -> None:
        self.db = db

    def save_rule_set(self, team: str, name: str, document: str, by: str) -> None:
        with self.db.write() as db:
            db.execute("INSERT INTO rule_sets (team, name, document, saved_by, saved) VALUES (?, ?, ?, ?, ?) "
                       "ON CONFLICT (team, name) DO UPDATE SET document = excluded.document, "
                       "saved_by = excluded.saved_by, saved = excluded.saved", (team, name, document, by, time.time()))

    def list_rule_sets(self, team: str) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.read(
            "SELECT name, document, saved_by, saved FROM rule_sets WHERE team = ? ORDER BY name", (team,))]

    def rule_set(self, team: str, name: str) -> dict[str, Any] | None:
        rows = self.db.read("SELECT name, document, saved_by, saved FROM rule_sets WHERE team = ? AND name = ?",
                            (team, name))
        return dict(rows[0]) if rows else None

    def delete_rule_set(self, team: str, name: str) -> bool:
        with self.db.write() as db:
            return db.execute("DELETE FROM rule_sets WHERE team = ? AND name = ?", (team, name)).rowcount > 0
