"""How every door (the chat, `nexus run`, MCP, eval, batch, skills) opens a session's tools: one function,
so the session, its run and the saving of its state are the same whichever door a call came through."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from cloud.config import Settings
from cloud.hostlink import HostLink
from cloud.session import Session, SessionState
from cloud.store import Store
from cloud.tools.base import ToolContext


def load_session(store: Store, row: dict[str, Any], transcript: bool) -> Session:
    """The session of a store row; its transcript read only when asked (tools never read it, the loop does)."""
    return Session(row["id"], row["user_name"], row["host_id"], row["model"],
                   SessionState.from_json(row["state"]), store.sessions.transcript(row["id"]) if transcript else [])


def open_tool_context(store: Store, settings: Settings, row: dict[str, Any], host: HostLink | None, *,
                      image_max_px: int, owner: str | None = None, cancel: threading.Event | None = None,
                      image_fit: Callable[[int, int], tuple[int, int]] | None = None,
                      transcript: bool = False) -> ToolContext:
    """The tools of the session `row` (a store row) on `host`, with a run started (driven by `owner`, a
    "<machine>:<pid>" whose death the recovery notices; None when nobody needs to notice). The run's state is
    saved when a tool records what it did (or by the caller through `save_state`). `transcript`: the session
    carries its transcript, for a door that runs the agent loop on it (a single tool call needs none)."""
    session = load_session(store, row, transcript)
    session.state.start_run(owner=owner)

    def save_state() -> None:
        store.sessions.update_session(session.session_id, state=session.state.to_json())

    extra = {"image_fit": image_fit} if image_fit is not None else {}
    return ToolContext(store=store, host=host, settings=settings, session=session,
                       cancel=cancel or threading.Event(), image_max_px=image_max_px, save_state=save_state, **extra)
