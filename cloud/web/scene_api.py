"""3D scenes (glTF 2.0 binary) of a tool result or of a host's view, and the viewer's library (docs/scene.md).

`GET /api/sessions/<id>/results/<tool_call_id>/scene` and `GET /api/hosts/<id>/scene?view=...&elements=...`
answer `model/gltf-binary`; the host builds the scene (`export_scene`, shared_contract/host/). Token- and
owner-checked like the image routes: another user's session or host answers as one that does not exist.
`GET /vendor/three/<path>` serves three.js from the checkout's node_modules (installed by `npm ci`), with its
bare `"three"` imports pointed at the served module, so the page needs no import map (CSP `script-src 'self'`).
"""
from __future__ import annotations

import base64
import gzip
import json
import os
import re
import threading
import uuid
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, g, request

from cloud.hostlink import HELD, WebSocketHostLink
from cloud.web.api import own_session
from cloud.web.auth import api_error, require_user
from cloud.web.state import nexus

scene_api = Blueprint("scene_api", __name__)

SCENE_TIMEOUT_S = 150.0
MAX_ELEMENTS = 10_000
THREE_DIR_ENV = "NEXUS_THREE_DIR"
_REPO_ROOT = Path(__file__).resolve().parents[2]
_BARE_THREE = re.compile(r"""(from\s*|import\s*\(?\s*)(['"])three\2""")
_SERVED_THREE = ("build/", "examples/jsm/")
HELD_GONE = "is no longer held"  # the host's words when a held_of scene comes too late
NO_REVIT_SCENE = ("Revit hosts cannot send a 3D scene yet (no Revit glTF exporter exists in NexusAI); "
                  "the image of the view is all there is for Revit.")


def three_dir() -> Path:
    """Where three's npm package is: $NEXUS_THREE_DIR, else node_modules/three in the checkout."""
    configured = os.environ.get(THREE_DIR_ENV)
    return Path(configured) if configured else _REPO_ROOT / "node_modules" / "three"


@scene_api.get("/api/sessions/<session_id>/results/<tool_call_id>/scene")
@require_user()
@own_session
def result_scene(row: dict[str, Any], tool_call_id: str):
    for _ in range(2):  # a second time when the held change was decided while the host built its scene
        command = _result_command(row, tool_call_id)
        if not isinstance(command, dict):
            return command
        answer = _ask_host(row.get("host_id"), command, tool_call_id)
        if "held_of" not in command or _decided_meanwhile(answer) is False:
            return answer
    return answer


def _result_command(row: dict[str, Any], tool_call_id: str) -> dict[str, Any] | tuple[Response, int]:
    """The export_scene for a stored result, or for the change held open for a decision under `ask` (whose
    result is stored only once it is decided): the host then builds it from the held model."""
    state = nexus()
    result = state.store.get_result(row["id"], tool_call_id)
    held = None if result is not None else held_request(state, row, tool_call_id)
    if held is not None:
        return {"type": "export_scene", "view": (held.get("image") or {}).get("view"),
                "changes": _change_ids(held.get("changes")), "before_of": f"{tool_call_id}.run",
                "held_of": f"{tool_call_id}.run"}
    if result is None:
        return api_error(404, f"no result for {tool_call_id}")
    command: dict[str, Any] = {"type": "export_scene", "view": (result.get("image") or {}).get("view")}
    changes = result.get("changes")
    if result.get("mode") == "automate" and isinstance(changes, dict) and result.get("committed") is not None:
        if not result.get("committed"):
            if (result.get("decision") or {}).get("decision") == "discard":
                return api_error(409, f"{tool_call_id} was discarded: the model is as it was, there is no change "
                                      "to show in 3D")
            return api_error(409, f"{tool_call_id} changed nothing (it was rolled back or discarded): "
                                  "there is no change to show in 3D")
        command["changes"] = _change_ids(changes)
        command["before_of"] = f"{tool_call_id}.run"
    elif not isinstance(result.get("image"), dict) or "view" not in result["image"]:
        return api_error(404, f"{tool_call_id} has no view to show in 3D (only automations and captured views have one)")
    return command


def held_request(state: Any, row: dict[str, Any], tool_call_id: str) -> dict[str, Any] | None:
    """The approval request's metadata (changes, image) of `tool_call_id` while the session's host holds it."""
    activity = state.hosts.activity(row.get("host_id")) if row.get("host_id") else None
    if activity is None or activity.state != HELD or activity.session_id != row["id"] \
            or activity.tool_call_id != tool_call_id:
        return None
    run = state.runs.recent(row["id"])
    for chunk in reversed(run.chunks if run is not None else []):
        meta = chunk.get("metadata") or {}
        if meta.get("kind") == "approval_request" and meta.get("tool_call_id") == tool_call_id:
            return meta
    return None


def _change_ids(changes: Any) -> dict[str, list[int]]:
    changes = changes if isinstance(changes, dict) else {}
    return {k: [int(i) for i in changes.get(k) or ()] for k in ("added", "modified", "deleted")}


def _decided_meanwhile(answer: Response | tuple[Response, int]) -> bool:
    response = answer[0] if isinstance(answer, tuple) else answer
    return response.status_code == 422 and HELD_GONE in (response.get_json(silent=True) or {}).get("error", "")


@scene_api.get("/api/hosts/<host_id>/scene")
@require_user()
def host_scene(host_id: str):
    unknown = set(request.args) - {"view", "elements", "max_bytes"}
    if unknown:
        return api_error(400, f"unknown parameter(s): {', '.join(sorted(unknown))} (give view, elements, max_bytes)")
    command: dict[str, Any] = {"type": "export_scene", "view": request.args.get("view") or None}
    element_ids, global_ids = [], []
    for token in (t.strip() for t in (request.args.get("elements") or "").split(",")):
        if not token:
            continue
        if token.lstrip("#").isdigit():
            element_ids.append(int(token.lstrip("#")))
        elif re.fullmatch(r"[0-9A-Za-z_$]{22}", token):
            global_ids.append(token)
        else:
            return api_error(400, f"elements: {token!r} is neither a step id (123 or #123) nor a GlobalId (22 characters)")
    if len(element_ids) + len(global_ids) > MAX_ELEMENTS:
        return api_error(400, f"elements: at most {MAX_ELEMENTS} elements per scene")
    if element_ids:
        command["element_ids"] = element_ids
    if global_ids:
        command["global_ids"] = global_ids
    if "max_bytes" in request.args:
        try:
            command["max_bytes"] = int(request.args["max_bytes"])
        except ValueError:
            return api_error(400, "max_bytes: expected a whole number of bytes")
        if not 65536 <= command["max_bytes"] <= 48 * 1024 * 1024:
            return api_error(400, "max_bytes: must be between 65536 and 50331648")
    return _ask_host(host_id, command, "scene-" + uuid.uuid4().hex[:12])


@scene_api.get("/vendor/three/<path:name>")
def three_file(name: str):
    if not name.startswith(_SERVED_THREE) or ".." in name.split("/") or not name.endswith(".js"):
        return api_error(404, f"no file {name} in the served part of three.js")
    root = three_dir()
    path = root / name
    if not path.is_file():
        if not (root / "package.json").is_file():
            return api_error(404, f"three.js is not installed: run `npm ci` in {_REPO_ROOT} (scripts/demo does)")
        return api_error(404, f"no file {name} in three.js")
    text = path.read_text(encoding="utf-8")
    if name.startswith("examples/jsm/"):
        text = _BARE_THREE.sub(lambda m: f"{m.group(1)}{m.group(2)}/vendor/three/build/three.module.js{m.group(2)}", text)
    return Response(text, mimetype="text/javascript", headers={"Cache-Control": "private, max-age=3600"})


def _ask_host(host_id: str | None, command: dict[str, Any], about: str) -> Response | tuple[Response, int]:
    state = nexus()
    connection = state.hosts.get(host_id)
    if connection is None or connection.user_name != g.user.name:
        return api_error(404, f"no connected host {host_id}" if host_id else "this session has no host")
    if connection.host_app == "revit":
        return api_error(409, NO_REVIT_SCENE)
    if not connection.hello.has("export_scene"):
        return api_error(409, f"host {host_id} ({connection.host_app}) cannot send a 3D scene (its runtime is older "
                              "than export_scene); update it")
    link = WebSocketHostLink(state.hosts, state.channel, connection.host_id, g.user.name, "scene-" + about)
    reply = link.ask(command, SCENE_TIMEOUT_S, threading.Event(), about=about)
    message = reply.message
    if message is None:
        return api_error(504, f"host {host_id} sent no scene ({reply.missing}) {reply.detail}".strip())
    if message.get("type") != "export_scene_result":
        return api_error(502, f"host {host_id} could not build the scene: {message.get('message')}")
    if not message.get("ok"):
        return api_error(422, f"the host could not build the scene: {message.get('error')}")
    summary = {k: message.get(k) for k in ("view", "nodes", "counts", "undrawn", "omitted_for_size",
                                           "omitted_for_time", "before_missing") if k in message}
    if "held_of" in command:
        summary["held"] = True  # the model as keeping the change would leave it, not yet the committed one
    glb = base64.b64decode(message["glb_base64"])
    headers = {"Cache-Control": "private, no-store", "X-Nexus-Scene": json.dumps(summary), "Vary": "Accept-Encoding"}
    if "gzip" in request.headers.get("Accept-Encoding", ""):
        # Node extras and index runs compress ~9x in tens of milliseconds (measured in docs/scene.md).
        glb, headers["Content-Encoding"] = gzip.compress(glb, compresslevel=6), "gzip"
    return Response(glb, mimetype="model/gltf-binary", headers=headers)
