"""Assembling one run: the session's state, its model, its host's provider, and the loop's callbacks."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cloud.chunks import Chunk
from cloud.context import fetch_context, render_context_block
from cloud.hosts.registry import UnknownHostApp, get_provider
from cloud.loop import RunContext, run_agentic_loop
from cloud.prompts import text
from cloud.runs import Run
from cloud.session import Session, SessionState
from cloud.tools.execute import ToolContext
from cloud.transcript import Entry, user_text
from cloud.vendors.base import ModelAdapter, Usage
from cloud.vendors.pricing import estimate_cost
from cloud.web.state import NexusState


def system_prompt(state: NexusState, host_id: str | None) -> str:
    """The base prompt plus the host's fragment; nothing in it changes from turn to turn (cache prefix)."""
    parts = [text("system.md")]
    connection = state.hosts.get(host_id)
    if connection is not None:
        try:
            parts.append(get_provider(connection.host_app).system_prompt_fragment(connection.hello))
        except UnknownHostApp:
            pass
    return "\n\n".join(p.strip() for p in parts)


def load_session(state: NexusState, row: dict[str, Any]) -> Session:
    return Session(row["id"], row["user_name"], row["host_id"], row["model"],
                   SessionState.from_json(row["state"]), state.store.transcript(row["id"]))


def drive_run(state: NexusState, row: dict[str, Any], model: ModelAdapter, user_message: str) -> Any:
    """Return the function the run registry drives on the run's own thread."""

    def drive(run: Run) -> Iterator[Chunk]:
        session = load_session(state, row)
        store = state.store

        def save_state() -> None:
            store.update_session(session.session_id, state=session.state.to_json())

        def append(entry: Entry) -> None:
            session.transcript.append(entry)
            store.append_entries(session.session_id, [entry])

        def record_usage(usage: Usage) -> dict[str, Any]:
            cost = estimate_cost(model.spec, usage)
            if usage.total_input or usage.output:
                store.record_usage(session_id=session.session_id, user_name=session.user_name, model=model.spec,
                                   usage=usage.as_dict(), cost=cost)
            return {**usage.as_dict(), "cost": cost, "model": model.spec}

        session.state.start_run()
        save_state()
        append(_user_turn(state, session, user_message, run))
        store.update_session(session.session_id, status="running")
        tools = ToolContext(store=store, channel=state.channel, hosts=state.hosts, settings=state.settings,
                            session=session, cancel=run.cancel,
                            image_max_px=getattr(model, "image_max_px", state.settings.image_max_px),
                            save_state=save_state)
        context = RunContext(tools, model, system_prompt(state, session.host_id), append, record_usage)
        status = "error"  # unless the loop ends with Complete (a crash propagates to the run registry)
        try:
            for chunk in run_agentic_loop(context):
                if chunk.type == "Error":
                    status = "cancelled" if (chunk.metadata or {}).get("cancelled") else "error"
                elif chunk.type == "Complete":
                    status = "idle"
                yield chunk
        finally:
            store.update_session(session.session_id, status=status)

    return drive


def _user_turn(state: NexusState, session: Session, user_message: str, run: Run) -> Entry:
    """The person's message, led by a fresh context block when a host is connected."""
    entry = user_text(user_message)
    connection = state.hosts.get(session.host_id)
    if connection is not None and connection.user_name == session.user_name:
        context = fetch_context(state.channel, state.hosts, connection, session.session_id, run.cancel)
        entry["content"].insert(0, {"type": "text", "kind": "host_context",
                                    "text": render_context_block(connection, context)})
    return entry

