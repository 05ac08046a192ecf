"""What an admin chooses per user (the run policy, the validation after automations), kept on the user's row.

The user's row is made by cloud/store/auth.py when their first token is; this part writes only its two
columns. `policies` also reads the session's own policy, so an automation learns both in one query.
"""
from __future__ import annotations

from cloud.store.database import Database

TABLES = ("users",)
READS = ("sessions",)  # the session's policy column, read beside the user's (never written here)


class UserSettings:
    def __init__(self, db: Database) -> None:
        self.db = db

    def set_user_policy(self, user_name: str, policy: str) -> bool:
        with self.db.write() as db:
            return db.execute("UPDATE users SET policy = ? WHERE name = ?", (policy, user_name)).rowcount > 0

    def set_user_validation(self, user_name: str, validation: str) -> bool:
        with self.db.write() as db:
            return db.execute("UPDATE users SET validation = ? WHERE name = ?",
                              (validation, user_name)).rowcount > 0

    def user_validation(self, user_name: str) -> str | None:
        rows = self.db.read("SELECT validation FROM users WHERE name = ?", (user_name,))
        return rows[0]["validation"] if rows else None

    def policies(self, session_id: str, user_name: str) -> tuple[str | None, str | None]:
        """The session's run policy and the user's (None where there is no such row), in one query: an
        automation reads both before it runs and again before it commits."""
        rows = self.db.read("SELECT (SELECT policy FROM sessions WHERE id = ?) AS session_policy, "
                            "(SELECT policy FROM users WHERE name = ?) AS user_policy", (session_id, user_name))
        return rows[0]["session_policy"], rows[0]["user_policy"]
