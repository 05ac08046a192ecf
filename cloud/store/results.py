"""The person's full copy of each tool call's result, and the images a session rendered."""
from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any

from cloud.store.database import Database

TABLES = ("results", "images")


class Results:
    def __init__(self, db: Database) -> None:
        self.db = db

    def save_result(self, session_id: str, tool_call_id: str, result: dict[str, Any]) -> None:
        """The person's copy of a tool call's result, written by the process driving the run (the answer
        it was made from was applied once: see cloud/store/deliveries.py)."""
        self.db.write_one("INSERT INTO results (session_id, tool_call_id, result) VALUES (?, ?, ?) "
                          "ON CONFLICT (session_id, tool_call_id) DO UPDATE SET result = excluded.result",
                          (session_id, tool_call_id, json.dumps(result)))

    def results_with_prefix(self, session_id: str, prefix: str) -> list[tuple[str, dict[str, Any]]]:
        """(tool call id, result) of the session's results whose id starts with `prefix` (letters, digits and
        `-` only: no LIKE wildcards), in id order."""
        if not re.fullmatch(r"[A-Za-z0-9-]+", prefix):
            raise ValueError("prefix: letters, digits and - only")
        rows = self.db.read("SELECT tool_call_id, result FROM results WHERE session_id = ? AND tool_call_id LIKE ? "
                            "ORDER BY tool_call_id", (session_id, prefix + "%"))
        return [(r["tool_call_id"], json.loads(r["result"])) for r in rows]

    def get_result(self, session_id: str, tool_call_id: str) -> dict[str, Any] | None:
        rows = self.db.read("SELECT result FROM results WHERE session_id = ? AND tool_call_id = ?",
                            (session_id, tool_call_id))
        return json.loads(rows[0]["result"]) if rows else None

    def save_image(self, session_id: str, png: bytes) -> str:
        image_id = uuid.uuid4().hex
        with self.db.write() as db:
            db.execute("INSERT INTO images (id, session_id, png, created) VALUES (?, ?, ?, ?)",
                       (image_id, session_id, png, time.time()))
        return image_id

    def list_images(self, session_id: str) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.read(
            "SELECT id AS image_id, created, length(png) AS bytes FROM images WHERE session_id = ? ORDER BY created",
            (session_id,))]

    def get_image(self, session_id: str, image_id: str) -> bytes | None:
        rows = self.db.read("SELECT png FROM images WHERE id = ? AND session_id = ?", (image_id, session_id))
        return bytes(rows[0]["png"]) if rows else None
