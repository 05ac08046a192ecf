"""Asking a host for a 3D scene (export_scene, docs/scene.md): of a stored result, of a change still held under
`ask`, or of a view; used by the HTTP routes (cloud/web/scene_api.py) and the MCP review card (cloud/mcp/apps.py).

`state` is anything with the orchestrator's `store`, `hosts`, `channel` and `runs` (the app's NexusState, the
MCP server's Backend). A refusal is `SceneRefused` with the HTTP status that says what kind it is.
"""
from __future__ import annotations

import base64
import threading
from dataclasses import dataclass
from typing import Any

from cloud.hostlink import HELD, WebSocketHostLink
from cloud.session_refs import REFS_CAPABILITY, session_refs

SCENE_TIMEOUT_S = 150.0
CHANGE_KINDS = ("added", "modified", "deleted")
HELD_GONE = "is no longer held"  # the host's words when a held_of scene comes after the decision
NO_REVIT_SCENE = ("Revit hosts cannot send a 3D scene yet (no Revit glTF exporter exists in NexusAI); "
                  "the image of the view is all there is for Revit.")
SUMMARY_KEYS = ("view", "nodes", "counts", "undrawn", "omitted_for_size", "omitted_for_time", "before_missing",
                "references")


class SceneRefused(Exception):
    def __init__(self, status: int, words: str) -> None:
        super().__init__(words)
        self.status, self.words = status, words


@dataclass(frozen=True)
class Scene:
    glb: bytes
    summary: dict[str, Any]  # what X-Nexus-Scene says: view, nodes, counts, undrawn, omitted_*, held?


def result_scene(state: Any, user_name: str, row: dict[str, Any], tool_call_id: str,
                 max_bytes: int | None = None) -> Scene:
    """The scene of a result of the session `row` (the caller checked it is `user_name`'s)."""
    for attempt in range(2):  # again when the held change was decided while the host built its scene
        command = result_command(state, row, tool_call_id)
        with_references(state, row, command)
        if max_bytes is not None:
            command["max_bytes"] = int(max_bytes)
        try:
            return ask_host(state, user_name, row.get("host_id"), command, tool_call_id)
        except SceneRefused as refused:
            if "held_of" not in command or HELD_GONE not in refused.words or attempt:
                raise
    raise AssertionError("unreachable")


def result_command(state: Any, row: dict[str, Any], tool_call_id: str) -> dict[str, Any]:
    """The export_scene for a stored result, or for the change held open for a decision under `ask` (whose
    result is stored only once it is decided): the host then builds it from the held model."""
    result = state.store.results.get_result(row["id"], tool_call_id)
    held = None if result is not None else held_request(state, row, tool_call_id)
    if held is not None:
        return {"type": "export_scene", "view": (held.get("image") or {}).get("view"),
                "changes": change_ids(held.get("changes")), "before_of": f"{tool_call_id}.run",
                "held_of": f"{tool_call_id}.run"}
    if result is None:
        raise SceneRefused(404, f"no result for {tool_call_id}")
    command: dict[str, Any] = {"type": "export_scene", "view": (result.get("image") or {}).get("view")}
    changes = result.get("changes")
    if result.get("mode") == "automate" and isinstance(changes, dict) and result.get("committed") is not None:
        if not result.get("committed"):
            if (result.get("decision") or {}).get("decision") == "discard":
                raise SceneRefused(409, f"{tool_call_id} was discarded: the model is as it was, there is no change "
                                        "to show in 3D")
            raise SceneRefused(409, f"{tool_call_id} changed nothing (it was rolled back or discarded): "
                                    "there is no change to show in 3D")
        command["changes"] = change_ids(changes)
        command["before_of"] = f"{tool_call_id}.run"
    elif not isinstance(result.get("image"), dict) or "view" not in result["image"]:
        raise SceneRefused(404, f"{tool_call_id} has no view to show in 3D (only automations and captured views "
                                "have one)")
    return command


def with_references(state: Any, row: dict[str, Any], command: dict[str, Any]) -> None:
    """The session's reference models go with the command (their elements are the scene's context, as the 3D
    image draws them), when its host takes references."""
    refs = session_refs(state.store, row["id"])
    connection = state.hosts.get(row["host_id"]) if refs and row.get("host_id") else None
    if connection is not None and connection.hello.has(REFS_CAPABILITY):
        command["refs"] = refs


def held_request(state: Any, row: dict[str, Any], tool_call_id: str) -> dict[str, Any] | None:
    """The approval request's metadata (changes, image) of `tool_call_id` while the session's host holds it."""
    activity = state.hosts.activity(row["host_id"]) if row.get("host_id") else None
    if activity is None or activity.state != HELD or activity.session_id != row["id"] \
            or activity.tool_call_id != tool_call_id:
        return None
    run = state.runs.recent(row["id"])
    for chunk in reversed(run.chunks if run is not None else []):
        meta = chunk.get("metadata") or {}
        if meta.get("kind") == "approval_request" and meta.get("tool_call_id") == tool_call_id:
            return meta
    return None


def change_ids(changes: Any) -> dict[str, list[int]]:
    changes = changes if isinstance(changes, dict) else {}
    return {k: [int(i) for i in changes.get(k) or ()] for k in CHANGE_KINDS}


def ask_host(state: Any, user_name: str, host_id: str | None, command: dict[str, Any], about: str) -> Scene:
    connection = state.hosts.get(host_id) if host_id else None
    if connection is None or connection.user_name != user_name:
        raise SceneRefused(404, f"no connected host {host_id}" if host_id else "this session has no host")
    if connection.host_app == "revit":
        raise SceneRefused(409, NO_REVIT_SCENE)
    if not connection.hello.has("export_scene"):
        raise SceneRefused(409, f"host {host_id} ({connection.host_app}) cannot send a 3D scene (its runtime is "
                                "older than export_scene); update it")
    link = WebSocketHostLink(state.hosts, state.channel, connection.host_id, user_name, "scene-" + about)
    reply = link.ask(command, SCENE_TIMEOUT_S, threading.Event(), about=about)
    message = reply.message
    if message is None:
        raise SceneRefused(504, f"host {host_id} sent no scene ({reply.missing}) {reply.detail}".strip())
    if message.get("type") != "export_scene_result":
        raise SceneRefused(502, f"host {host_id} could not build the scene: {message.get('message')}")
    if not message.get("ok"):
        raise SceneRefused(422, f"the host could not build the scene: {message.get('error')}")
    summary = {k: message[k] for k in SUMMARY_KEYS if k in message}
    if "held_of" in command:
        summary["held"] = True  # the model as keeping the change would leave it, not yet the committed one
    return Scene(base64.b64decode(message["glb_base64"]), summary)
