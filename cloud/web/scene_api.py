"""3D scenes (glTF 2.0 binary) of a tool result or of a host's view, and the viewer's library (docs/scene.md).

`GET /api/sessions/<id>/results/<tool_call_id>/scene` and `GET /api/hosts/<id>/scene?view=...&elements=...`
answer `model/gltf-binary`; the host builds the scene (`export_scene`, shared_contract/host/). Token- and
owner-checked like the image routes: another user's session or host answers as one that does not exist.
`GET /vendor/three/<path>` serves three.js from the checkout's node_modules (installed by `npm ci`), with its
bare `"three"` imports pointed at the served module, so the page needs no import map (CSP `script-src 'self'`).
"""
from __future__ import annotations

import gzip
import json
import re
import uuid
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, g, request

from cloud import scene_source
from cloud.scene_bundle import three_dir
from cloud.scene_source import SceneRefused
from cloud.web.api import own_session
from cloud.web.auth import api_error, require_user
from cloud.web.state import nexus

scene_api = Blueprint("scene_api", __name__)

MAX_ELEMENTS = 10_000
_REPO_ROOT = Path(__file__).resolve().parents[2]
_BARE_THREE = re.compile(r"""(from\s*|import\s*\(?\s*)(['"])three\2""")
_SERVED_THREE = ("build/", "examples/jsm/")


@scene_api.get("/api/sessions/<session_id>/results/<tool_call_id>/scene")
@require_user()
@own_session
def result_scene(row: dict[str, Any], tool_call_id: str):
    try:
        return _scene_response(scene_source.result_scene(nexus(), g.user.name, row, tool_call_id))
    except SceneRefused as refused:
        return api_error(refused.status, refused.words)


@scene_api.get("/api/hosts/<host_id>/scene")
@require_user()
def host_scene(host_id: str):
    unknown = set(request.args) - {"view", "elements", "max_bytes", "session"}
    if unknown:
        return api_error(400, f"unknown parameter(s): {', '.join(sorted(unknown))} "
                              "(give view, elements, max_bytes, session)")
    command: dict[str, Any] = {"type": "export_scene", "view": request.args.get("view") or None}
    if request.args.get("session"):  # that session's reference models around the view, as its 3D images have
        row = nexus().store.sessions.get_session(request.args["session"])
        if row is None or row.get("user_name") != g.user.name:
            return api_error(404, f"no session {request.args['session']}")
        if row.get("host_id") != host_id:
            return api_error(400, f"session: {request.args['session']} is a session of another host, not {host_id}")
        scene_source.with_references(nexus(), row, command)
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
    try:
        return _scene_response(scene_source.ask_host(nexus(), g.user.name, host_id, command,
                                                     "scene-" + uuid.uuid4().hex[:12]))
    except SceneRefused as refused:
        return api_error(refused.status, refused.words)


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


def _scene_response(scene: scene_source.Scene) -> Response:
    glb = scene.glb
    headers = {"Cache-Control": "private, no-store", "X-Nexus-Scene": json.dumps(scene.summary),
               "Vary": "Accept-Encoding"}
    if "gzip" in request.headers.get("Accept-Encoding", ""):
        # Node extras and index runs compress ~8x (measured in docs/scene.md); level 1 keeps all but 1-2 % of
        # level 6's gain in a quarter to a half less time (Revit BasicHouse's 4.25 MB: 0.23 s against 0.28-0.43 s).
        glb, headers["Content-Encoding"] = gzip.compress(glb, compresslevel=1), "gzip"
    return Response(glb, mimetype="model/gltf-binary", headers=headers)
