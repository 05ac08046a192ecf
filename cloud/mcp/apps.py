"""The review card for MCP clients that render MCP Apps (the `io.modelcontextprotocol/ui` extension, npm
`@modelcontextprotocol/ext-apps`): a `ui://` HTML resource declared on the automation and capture tools
(`_meta.ui.resourceUri`) and named again on their results, showing the change report, the image and, for a
change held under `ask`, Keep and Discard.

The card is one self-contained HTML file (data/review_card.html: no network, no external script or style),
served by resources/read as `text/html;profile=mcp-app`. While its call waits for a decision the card asks the
server, through the client, for the held change (`review_held_change`) and decides it (`decide_held_change`):
two tools only the app may call (`_meta.ui.visibility: ["app"]`), answering for the caller's own held
changes only. A client that renders apps decides in the card instead of an elicitation form; every other
client keeps its text, image and structured content as they were, and its elicitation (or the chat page).
"""
from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools.base import Tool
from mcp_types import CallToolResult, ClientCapabilities, ListToolsResult, TextContent

from cloud import scene_source
from cloud.mcp.given_tool import GivenTool, given_tool
from cloud.mcp.results import as_text
from cloud.scene_bundle import BundleError, card_viewer_css, card_viewer_script
from cloud.scene_source import SceneRefused

EXTENSION_ID = "io.modelcontextprotocol/ui"
MIME_TYPE = "text/html;profile=mcp-app"
CARD_URI = "ui://nexusai/review-card.html"
CARD_FILE = Path(__file__).with_name("data") / "review_card.html"
VIEWER_SLOT = "<!-- nexus:scene-viewer -->"
CARD_SCENE_MAX_BYTES = 16 * 1024 * 1024  # a tool result carries the GLB as base64 text
CARD_TOOLS = ("execute_task_automation", "capture_view", "run_skill")  # results with a change report or image
DECIDED_BY = "the person in the MCP client's review card"
DECIDE_IN_CARD = ("The change is held until you keep or discard it in the review card (or the chat page, "
                  "session {session_id}).")
NOT_HELD = ("No change held for you is waiting under tool call {tool_call_id}: it was decided already, timed out, "
            "or is not yours.")

ToolHandler = Callable[[dict[str, Any], Context], Awaitable[CallToolResult]]


def renders_apps(capabilities: ClientCapabilities | None) -> bool:
    """Whether the client said it renders MCP Apps HTML (capabilities.extensions, or experimental before
    the 2026-07-28 capabilities had extensions)."""
    if capabilities is None:
        return False
    for table in (capabilities.extensions, capabilities.experimental):
        settings = (table or {}).get(EXTENSION_ID)
        if isinstance(settings, dict) and MIME_TYPE in (settings.get("mimeTypes") or []):
            return True
    return False


def listed_for(listing: ListToolsResult, capabilities: ClientCapabilities | None) -> ListToolsResult:
    """tools/list as this client sees it: the card's own tools only for a client that renders the card (a
    client that does not would hand them to its model, for whom they are not)."""
    if renders_apps(capabilities):
        return listing
    return listing.model_copy(update={"tools": [t for t in listing.tools if t.name not in APP_TOOLS]})


def card_meta() -> dict[str, Any]:
    return {"ui": {"resourceUri": CARD_URI}, "ui/resourceUri": CARD_URI}  # the second: older hosts read it


def tool_meta(name: str) -> dict[str, Any] | None:
    """The `_meta` a loop tool is listed with: the card's URI for automation and capture tools."""
    return card_meta() if name in CARD_TOOLS else None


def with_card(name: str, result: CallToolResult) -> CallToolResult:
    """A loop tool's result, naming the card again (its content and structured content are untouched)."""
    if name in CARD_TOOLS:
        result.meta = {**(result.meta or {}), **card_meta()}
    return result


@cache
def card_html() -> str:
    """The card with the 3D viewer and three.js inlined where it says VIEWER_SLOT (cloud/scene_bundle.py)."""
    try:
        viewer = (f'<style data-scene-css="1">\n{card_viewer_css()}\n</style>\n'
                  f"<script>\n{card_viewer_script()}\n</script>")
    except BundleError as exc:  # the card still shows the report, the image and Keep/Discard
        viewer = f"<script>window.NexusSceneViewerMissing = {json.dumps(str(exc))};</script>"
    return CARD_FILE.read_text(encoding="utf-8").replace(VIEWER_SLOT, viewer, 1)


def register_card(server: MCPServer) -> None:
    @server.resource(CARD_URI, name="review_card", title="NexusAI review card", mime_type=MIME_TYPE,
                     description="The change report, image and Keep/Discard of an automation, for clients that "
                                 "render MCP Apps.",
                     meta={"ui": {"prefersBorder": True, "csp": {"connectDomains": [], "resourceDomains": []}}})
    def review_card() -> str:
        return card_html()


@dataclass
class HeldChange:
    """An automation held under `ask`, waiting for the person, as its call's approval_request described it."""
    user: str
    connection: str
    session_id: str
    tool_call_id: str
    tool: str
    request: dict[str, Any]
    since: float = field(default_factory=time.time)


class HeldChanges:
    """The held changes whose client renders the card, by tool call id (thread-safe)."""

    def __init__(self) -> None:
        self._held: dict[str, HeldChange] = {}
        self._lock = threading.Lock()

    def add(self, change: HeldChange) -> None:
        with self._lock:
            self._held[change.tool_call_id] = change

    def forget(self, tool_call_id: str) -> None:
        with self._lock:
            self._held.pop(tool_call_id, None)

    def of(self, user: str, connection: str) -> list[HeldChange]:
        """The caller's held changes on this connection first, then their others, oldest first."""
        with self._lock:
            mine = [c for c in self._held.values() if c.user == user]
        return sorted(mine, key=lambda c: (c.connection != connection, c.since))

    def take(self, user: str, tool_call_id: str) -> HeldChange | None:
        """The held change `tool_call_id` if it is this user's (another user's is unknown), removed."""
        with self._lock:
            change = self._held.get(tool_call_id)
            if change is None or change.user != user:
                return None
            return self._held.pop(tool_call_id)


def held_view(change: HeldChange, image_png: bytes | None) -> dict[str, Any]:
    """What the card shows of a held change: the report, changes, findings, output and the preview image."""
    request = change.request
    image = request.get("image") or None
    shown_image = None
    if image and image_png:
        shown_image = {"data": base64.b64encode(image_png).decode("ascii"), "mime_type": "image/png",
                       "view": image.get("view"), "width": image.get("width"), "height": image.get("height")}
    return {"tool_call_id": change.tool_call_id, "session_id": change.session_id, "tool": change.tool,
            "change_report": request.get("change_report"), "changes": request.get("changes"),
            "failures": request.get("failures") or [], "stdout": request.get("stdout") or "",
            "validation": request.get("validation"), "image": shown_image,
            "image_error": (image or {}).get("error"), "timeout_s": request.get("timeout_s"),
            "waiting_s": round(time.time() - change.since, 1)}


HELD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"held": {"type": "array", "items": {"type": "object"}}},
    "required": ["held"]}
DECIDED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "decision": {"enum": ["keep", "discard"]},
                   "tool_call_id": {"type": "string"}, "error": {"type": "string"}},
    "required": ["ok"]}
SCENE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "glb_base64": {"type": "string"},
                   "summary": {"type": "object"}, "error": {"type": "string"}},
    "required": ["ok"]}
APP_TOOLS: dict[str, dict[str, Any]] = {
    "review_held_change": {
        "description": "For NexusAI's review card: the automations of this client that are held for Keep or "
                       "Discard, with their change report and preview image.",
        "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
        "output_schema": HELD_SCHEMA,
        "annotations": {"title": "The held change (review card)", "readOnlyHint": True, "openWorldHint": False}},
    "decide_held_change": {
        "description": "For NexusAI's review card: the person's Keep or Discard on a held automation.",
        "input_schema": {"type": "object", "properties": {
            "tool_call_id": {"type": "string", "minLength": 1, "maxLength": 200},
            "decision": {"enum": ["keep", "discard"]},
            "comment": {"type": "string", "maxLength": 2000}},
            "required": ["tool_call_id", "decision"], "additionalProperties": False},
        "output_schema": DECIDED_SCHEMA,
        "annotations": {"title": "Keep or discard the held change (review card)", "readOnlyHint": False,
                        "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}},
    "scene_of_change": {
        "description": "For NexusAI's review card: the 3D scene (glTF binary, base64) of one of your results, or "
                       "of your change held for Keep or Discard, with its changed elements marked.",
        "input_schema": {"type": "object", "properties": {
            "session_id": {"type": "string", "minLength": 1, "maxLength": 200},
            "tool_call_id": {"type": "string", "minLength": 1, "maxLength": 200}},
            "required": ["session_id", "tool_call_id"], "additionalProperties": False},
        "output_schema": SCENE_SCHEMA,
        "annotations": {"title": "The 3D scene of a change (review card)", "readOnlyHint": True,
                        "openWorldHint": False}},
}


def app_tool(name: str, handler: ToolHandler) -> GivenTool:
    """A tool only the card calls: `_meta.ui.visibility` ["app"] (hosts keep it from the model)."""
    spec = APP_TOOLS[name]
    return given_tool(name, spec["description"], spec["input_schema"], spec["output_schema"], handler,
                      spec["annotations"], {"ui": {"resourceUri": CARD_URI, "visibility": ["app"]}})


def structured(value: dict[str, Any], is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=as_text(value))], structured_content=value, is_error=is_error)


class CardServer(Protocol):
    """What the card's tools need of the MCP server (cloud/mcp/server.py's NexusMcp)."""

    backend: Any
    calls: Any

    def caller(self, ctx: Context) -> Any: ...


class ReviewCard:
    """The card's side of the server: which held changes a rendering client decides in the card, and the two
    tools the card calls."""

    def __init__(self) -> None:
        self.held = HeldChanges()

    async def offer(self, ctx: Context, caller: Any, session_id: str, tool_call_id: str, tool: str,
                    request: dict[str, Any]) -> bool:
        """Under `ask`: True when the client renders the card, which then decides (no elicitation form)."""
        if not renders_apps(ctx.client_capabilities):
            return False
        self.held.add(HeldChange(caller.user, caller.connection, session_id, tool_call_id, tool, request))
        await ctx.report_progress(0, None, DECIDE_IN_CARD.format(session_id=session_id))
        return True

    def tools(self, server: CardServer, when_ready: Callable[[ToolHandler], ToolHandler]) -> list[Tool]:
        async def review(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
            return await self.review(server, ctx)

        async def decide(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
            return await self.decide(server, arguments, ctx)

        async def scene(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
            return await self.scene(server, arguments, ctx)

        return [app_tool("review_held_change", when_ready(review)), app_tool("decide_held_change", when_ready(decide)),
                app_tool("scene_of_change", when_ready(scene))]

    async def review(self, server: CardServer, ctx: Context) -> CallToolResult:
        caller = server.caller(ctx)
        store = server.backend.store
        views = []
        for change in self.held.of(caller.user, caller.connection):
            image_id = (change.request.get("image") or {}).get("image_id")
            png = await anyio.to_thread.run_sync(store.results.get_image, change.session_id, image_id) if image_id else None
            views.append(held_view(change, png))
        return structured({"held": views})

    async def decide(self, server: CardServer, arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        tool_call_id, decision = arguments.get("tool_call_id"), arguments.get("decision")
        comment = arguments.get("comment") or ""
        if not isinstance(tool_call_id, str) or not tool_call_id or decision not in ("keep", "discard") \
                or not isinstance(comment, str):
            return structured({"ok": False, "error": "decide_held_change takes tool_call_id (a string), decision "
                                                     "(keep or discard) and an optional comment (a string)"}, True)
        caller = server.caller(ctx)
        change = self.held.take(caller.user, tool_call_id)
        if change is None:
            return structured({"ok": False, "error": NOT_HELD.format(tool_call_id=tool_call_id)}, True)
        answer = {"decision": decision, "by": DECIDED_BY, **({"comment": comment} if comment else {})}
        delivered = await anyio.to_thread.run_sync(server.calls.decide, change.session_id, tool_call_id, answer)
        if not delivered:
            return structured({"ok": False, "error": NOT_HELD.format(tool_call_id=tool_call_id)}, True)
        return structured({"ok": True, "decision": decision, "tool_call_id": tool_call_id})

    async def scene(self, server: CardServer, arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        """The scene of the caller's own result or held change (another user's session is as unknown)."""
        session_id, tool_call_id = arguments.get("session_id"), arguments.get("tool_call_id")
        if not isinstance(session_id, str) or not isinstance(tool_call_id, str) or not session_id or not tool_call_id:
            return structured({"ok": False, "error": "scene_of_change takes session_id and tool_call_id (strings)"},
                              True)
        caller = server.caller(ctx)
        backend = server.backend
        row = await anyio.to_thread.run_sync(backend.store.sessions.get_session, session_id)
        if row is None or row["user_name"] != caller.user:
            return structured({"ok": False, "error": f"no session {session_id}"}, True)
        try:
            scene = await anyio.to_thread.run_sync(scene_source.result_scene, backend, caller.user, row, tool_call_id,
                                                   CARD_SCENE_MAX_BYTES)
        except SceneRefused as refused:
            return structured({"ok": False, "error": refused.words}, True)
        value = {"ok": True, "glb_base64": base64.b64encode(scene.glb).decode("ascii"), "summary": scene.summary}
        words = f"The 3D scene of {tool_call_id}: {as_text(scene.summary)} ({len(scene.glb)} bytes of glTF)."
        return CallToolResult(content=[TextContent(text=words)], structured_content=value)  # the GLB once, not twice
