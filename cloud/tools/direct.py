"""Running a skill without a model: one `run_skill` call in a session of its own, through the same tool
path the model's calls take (policy, sha256 and host checks, one transaction, report, validation, audit)."""
from __future__ import annotations

import uuid
from collections.abc import Generator
from typing import Any

from cloud.chunks import Chunk
from cloud.config import Settings
from cloud.hostlink import HostLink
from cloud.process_owner import this_process
from cloud.store import Store
from cloud.tools.dispatch import execute_tool
from cloud.tools.opening import open_tool_context

DIRECT_IMAGE_MAX_PX = 1568


def run_skill_directly(store: Store, settings: Settings, host: HostLink | None, row: dict[str, Any], name: str,
                       args: dict[str, Any]) -> Generator[Chunk, None, dict[str, Any]]:
    """Yield the call's chunks; return the person's full result (`refused` when nothing ran)."""
    ctx = open_tool_context(store, settings, row, host, image_max_px=DIRECT_IMAGE_MAX_PX, owner=this_process())
    call = {"id": "skill_" + uuid.uuid4().hex[:16], "name": "run_skill", "input": {"name": name, "args": args}}
    called = yield from execute_tool(ctx, call)
    if not called.ran:
        text = " ".join(c.get("text", "") for c in called.part.get("content", []) if c.get("type") == "text")
        return {"ok": False, "committed": False, "summary": text, "refused": True}
    return called.person
