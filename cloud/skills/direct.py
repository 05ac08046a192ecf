"""Running a skill without a model: one `run_skill` call in a session of its own, through the same tool
path the model's calls take (policy, sha256 and host checks, one transaction, report, validation, audit)."""
from __future__ import annotations

import threading
import uuid
from collections.abc import Generator
from typing import Any

from cloud.assembly import load_session
from cloud.chunks import Chunk
from cloud.config import Settings
from cloud.hostlink import HostLink
from cloud.store import Store
from cloud.tools.base import ToolContext
from cloud.tools.dispatch import execute_tool

DIRECT_IMAGE_MAX_PX = 1568


def run_skill_directly(store: Store, settings: Settings, host: HostLink | None, row: dict[str, Any], name: str,
                       args: dict[str, Any]) -> Generator[Chunk, None, dict[str, Any] | None]:
    """Yield the call's chunks; return the person's full result (None when the call was refused)."""
    session = load_session(store, row)
    session.state.start_run(owner="direct")

    def save_state() -> None:
        store.update_session(session.session_id, state=session.state.to_json())

    ctx = ToolContext(store=store, host=host, settings=settings, session=session, cancel=threading.Event(),
                      image_max_px=DIRECT_IMAGE_MAX_PX, save_state=save_state)
    call = {"id": "skill_" + uuid.uuid4().hex[:16], "name": "run_skill", "input": {"name": name, "args": args}}
    part = yield from execute_tool(ctx, call)
    result = store.get_result(session.session_id, call["id"])
    if result is None:
        text = " ".join(c.get("text", "") for c in part.get("content", []) if c.get("type") == "text")
        return {"ok": False, "committed": False, "summary": text, "refused": True}
    return result
