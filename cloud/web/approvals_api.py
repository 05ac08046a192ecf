"""The person's held changes, from every source (a chat-page run, an MCP client, a delegated run): each
host of theirs that holds a change open for a Keep/Discard decision, with the session to decide it in.

`GET /api/approvals` (the user's token, or the page's sign-in) lists only the user's own. The chat page
shows the list and opens the session, where the change has its approval card as in any run; the decision
goes to `POST /api/sessions/<id>/approval` as for a chat run.
"""
from __future__ import annotations

from typing import Any

from flask import Blueprint, g, jsonify

from cloud.hostlink import HELD
from cloud.web.auth import require_user
from cloud.web.state import nexus

approvals_api = Blueprint("approvals_api", __name__)


@approvals_api.get("/api/approvals")
@require_user()
def list_approvals():
    state = nexus()
    approvals = []
    for connection in state.hosts.for_user(g.user.name):
        activity = state.hosts.activity(connection.host_id)
        if activity.state != HELD or not activity.session_id or not activity.tool_call_id:
            continue
        row = state.store.sessions.get_session(activity.session_id)
        if row is None or row["user_name"] != g.user.name:
            continue
        request = _approval_request(state, activity.session_id, activity.tool_call_id)
        document = connection.describe().get("document") or {}
        approvals.append({
            "session_id": activity.session_id, "tool_call_id": activity.tool_call_id,
            "host_id": connection.host_id, "host_app": connection.host_app,
            "document": document.get("title") if isinstance(document, dict) else None,
            "source": row["model"] or "", "since": activity.since, "until": activity.until,
            # False for a hold no run waits for any more (the host list's release discards it)
            "decidable": state.channel.awaiting_decision(activity.session_id),
            "summary": (request or {}).get("content", ""),
            "change_report": ((request or {}).get("metadata") or {}).get("change_report"),
            "link": f"/#session={activity.session_id}"})
    return jsonify({"approvals": sorted(approvals, key=lambda a: a["since"] or 0)})


def _approval_request(state: Any, session_id: str, tool_call_id: str) -> dict[str, Any] | None:
    """The run's approval_request chunk for the held call, where this process drives the run."""
    run = state.runs.recent(session_id)
    for chunk in reversed(run.chunks if run is not None else []):
        meta = chunk.get("metadata") or {}
        if meta.get("kind") == "approval_request" and meta.get("tool_call_id") == tool_call_id:
            return chunk
    return None
