"""Renaming the first door and reading its name back through a real keeper: the commits and reads the
handover tests (test_keeper_handover.py, test_handover_policy.py) count on, and the keeper's live children."""
from __future__ import annotations

import time
from pathlib import Path

from ifc_host.executor import IsolatedExecutor, execute_command

RENAME_FIRST_DOOR = "sorted(model.by_type('IfcDoor'), key=lambda d: d.id())[0].Name = {name!r}"
FIRST_DOOR_NAME = "print(sorted(model.by_type('IfcDoor'), key=lambda d: d.id())[0].Name)"


def commit(executor: IsolatedExecutor, request_id: str, name: str) -> dict:
    reply = executor.execute(execute_command(request_id, "automate", RENAME_FIRST_DOOR.format(name=name), 60))
    assert reply["committed"] is True and reply["ok"], reply.get("error")
    return reply


def first_door(executor: IsolatedExecutor) -> str:
    reply = executor.execute(execute_command(f"read-{time.monotonic_ns()}", "collect", FIRST_DOOR_NAME, 60))
    assert reply["ok"], reply.get("error")
    return reply["stdout"].strip()


def live_children(pid: int | None) -> set[int]:
    """The processes `pid` forked that have not ended (its script processes kept ready, and their scripts')."""
    found = set()
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            found.add(int(child))
    return found
