"""Show in the host: `POST /api/sessions/{id}/show-elements` {element_ids} asks the session's host to select
and zoom to elements (the chat page's "Show in Revit").

Only the session's owner, only that session's own host, and only while that host is connected with the
same user's token: another user's session is answered like one that does not exist (404), and a host that
another user connected is never reached (WebSocketHostLink checks the owner on every send). Hosts that do
not offer `show_elements` (the IFC host) are answered 409, naming what they are.
"""
from __future__ import annotations

import threading
import uuid
from typing import Any

from flask import Blueprint, g, jsonify, request

from cloud.contract import ContractError, validate_host_message
from cloud.hostlink import WebSocketHostLink
from cloud.web.auth import api_error, require_user
from cloud.web.state import nexus

show_api = Blueprint("show_api", __name__, url_prefix="/api")

SHOW_CAPABILITY = "show_elements"
SHOW_TIMEOUT_S = 30.0  # Revit's own pickup timeout for it is 10 s; the rest is the network and the job
HOST_NAMES = {"revit": "Revit", "ifc": "The IFC host"}


def _element_ids() -> list[int]:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise ContractError("request body must be a JSON object {\"element_ids\": [...]}")
    unknown = sorted(set(body) - {"element_ids"})
    if unknown:
        raise ContractError(f"unknown field(s): {', '.join(unknown)}")
    if "element_ids" not in body:
        raise ContractError("missing field(s): element_ids")
    command = {"type": "show_elements", "request_id": "check", "element_ids": body["element_ids"]}
    validate_host_message(command)  # the schema's words: element_ids/0: 'x' is not of type 'integer', ...
    return list(body["element_ids"])


@show_api.post("/sessions/<session_id>/show-elements")
@require_user()
def show_elements(session_id: str):
    state = nexus()
    row = state.store.sessions.get_session(session_id)
    if row is None or row["user_name"] != g.user.name:
        return api_error(404, f"no session {session_id}")
    try:
        element_ids = _element_ids()
    except ContractError as exc:
        return api_error(400, str(exc))
    host_id = row.get("host_id")
    connection = state.hosts.get(host_id) if host_id else None
    if connection is None or connection.user_name != g.user.name:
        return api_error(409, f"this conversation's host {host_id} is not connected" if host_id
                         else "this conversation has no host")
    if SHOW_CAPABILITY not in (connection.hello.get("capabilities") or []):
        if connection.host_app == "revit":
            return api_error(409, "this Revit's NexusAI extension is too old to show elements: update it")
        name = HOST_NAMES.get(connection.host_app, connection.host_app)
        return api_error(409, f"{name} cannot show elements (only Revit can)")
    about = "show-" + uuid.uuid4().hex[:12]
    link = WebSocketHostLink(state.hosts, state.channel, host_id, g.user.name, about)
    reply = link.ask({"type": "show_elements", "element_ids": element_ids}, SHOW_TIMEOUT_S, threading.Event(),
                     about=about)
    message: dict[str, Any] | None = reply.message
    if message is None:
        return api_error(504, f"the host did not answer ({reply.missing}) {reply.detail}".strip())
    if message.get("type") != "show_elements_result":
        return api_error(409, str(message.get("message") or "the host could not show the elements"))
    return jsonify({key: message.get(key) for key in ("ok", "shown", "missing", "zoomed", "view", "document",
                                                       "note", "error") if key in message})
