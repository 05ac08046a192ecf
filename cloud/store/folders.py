"""Project folders under the batch root shared with teams: read or read-write (cloud/folders/access.py
enforces them, an admin grants them)."""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from cloud.store.database import Database

TABLES = ("folder_grants",)
FOLDER_ACCESS = ("read", "read-write")


class FolderGrants:
    def __init__(self, db: Database) -> None:
        self.db = db

    def grant_folder(self, folder: str, team: str, access: str, by: str) -> None:
        if access not in FOLDER_ACCESS:
            raise ValueError(f"access: one of {FOLDER_ACCESS}")
        with self.db.write() as db:
            db.execute("INSERT INTO folder_grants (folder, team, access, granted_by, granted) VALUES (?, ?, ?, ?, ?) "
                       "ON CONFLICT (folder, team) DO UPDATE SET access = excluded.access, "
                       "granted_by = excluded.granted_by, granted = excluded.granted",
                       (folder, team, access, by, time.time()))

    def revoke_folder(self, folder: str, team: str) -> bool:
        with self.db.write() as db:
            return db.execute("DELETE FROM folder_grants WHERE folder = ? AND team = ?",
                              (folder, team)).rowcount > 0

    def folder_grants(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.read(
            "SELECT folder, team, access, granted_by, granted FROM folder_grants ORDER BY folder, team")]

    def folder_access(self, teams: Sequence[str]) -> dict[str, str]:
        """Project folder -> "read" | "read-write": the strongest grant to any of `teams`."""
        found: dict[str, str] = {}
        for team in teams:
            for row in self.db.read("SELECT folder, access FROM folder_grants WHERE team = ?", (team,)):
                if found.get(row["folder"]) != "read-write":
                    found[row["folder"]] = row["access"]
        return found
