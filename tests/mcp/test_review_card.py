"""The review card for MCP clients that render MCP Apps (issue 28, item 4), with a minimal host written here on
the official `mcp` client over stdio (`nexus mcp --ifc --policy ask`, the real IFC host): the tools name the
card (`_meta.ui.resourceUri`), resources/read serves it as `text/html;profile=mcp-app`, and Keep or Discard
through the card's own tools decides the held change; a client that does not render apps sees no difference."""
from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import anyio
import ifcopenshell
import mcp_types as types
import pytest

from cloud.mcp.apps import CARD_URI, EXTENSION_ID, MIME_TYPE
from tests.mcp.support import stdio_session, text_of

RENAME = "model.by_type('IfcDoor')[0].Name = '{name}'\n"
RENDERS_APPS = {EXTENSION_ID: {"mimeTypes": [MIME_TYPE]}}


@pytest.fixture(scope="module")
def sample_ifc(tmp_path_factory) -> Path:
    from ifc_host.sample import write_sample_model

    path = tmp_path_factory.mktemp("mcp_card") / "sample.ifc"
    write_sample_model(str(path), storeys=1)
    return path


def door_names(path: Path) -> set[str]:
    return {d.Name for d in ifcopenshell.open(str(path)).by_type("IfcDoor")} if path.exists() else set()


def meta_of(item: Any) -> dict[str, Any]:
    return item.model_dump(by_alias=True).get("_meta") or {}


async def held_change(session: Any, timeout_s: float = 60.0) -> dict[str, Any]:
    """What the card does while its call waits: ask for the held change until there is one."""
    with anyio.fail_after(timeout_s):
        while True:
            answer = await session.call_tool("review_held_change", {})
            held = answer.structured_content["held"]
            if held:
                return held[0]
            await anyio.sleep(0.2)


def test_the_card_is_declared_on_the_tools_and_served_self_contained(sample_ifc, tmp_path):
    async def scenario():
        async with stdio_session("--ifc", str(sample_ifc), "--db", str(tmp_path / "db.sqlite"),
                                 extensions=RENDERS_APPS) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            listed = (await session.list_resources()).resources
            read = await session.read_resource(CARD_URI)
            return tools, listed, read

    tools, listed, read = anyio.run(scenario)
    for name in ("execute_task_automation", "capture_view", "run_skill"):
        assert meta_of(tools[name])["ui"]["resourceUri"] == CARD_URI, name
    assert "ui" not in meta_of(tools["execute_data_collection"])
    for name in ("review_held_change", "decide_held_change", "scene_of_change"):
        assert meta_of(tools[name])["ui"] == {"resourceUri": CARD_URI, "visibility": ["app"]}
    (card,) = [r for r in listed if str(r.uri) == CARD_URI]
    assert card.mime_type == MIME_TYPE
    (content,) = read.contents
    assert content.mime_type == MIME_TYPE and content.text.startswith("<!doctype html>")
    html = content.text
    assert "<script>" in html and "ui/initialize" in html and "decide_held_change" in html
    # self-contained: no script, style, image or frame fetched from anywhere, no eval
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=[\"']?(https?:)?//", html, re.I)
    assert "@import" not in html and "eval(" not in html and "new Function" not in html
    assert "data-nexus-scene-slot" in html  # the image, with the 3D viewer beside it
    assert "window.NexusSceneViewer = " in html and "GLTFLoader" in html  # three.js and the viewer, inlined


@pytest.mark.parametrize("decision", ["keep", "discard"])
def test_keep_or_discard_in_the_card_decides_the_held_change(sample_ifc, tmp_path, decision):
    out = tmp_path / "out.ifc"
    name = "CARD_" + decision.upper()
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)  # never: a client that renders the card decides there
        return types.ElicitResult(action="accept", content={"keep": decision != "keep"})

    async def scenario():
        async with stdio_session("--ifc", str(sample_ifc), "--out", str(out), "--db", str(tmp_path / "db.sqlite"),
                                 "--policy", "ask", extensions=RENDERS_APPS, elicitation_callback=elicit) as session:
            results: dict[str, Any] = {}

            async def automate() -> None:
                results["call"] = await session.call_tool("execute_task_automation",
                                                          {"code": RENAME.format(name=name)})

            async with anyio.create_task_group() as group:
                group.start_soon(automate)
                held = await held_change(session)
                refused = await session.call_tool("decide_held_change", {"tool_call_id": "mcp_not_mine",
                                                                         "decision": "keep"})
                decided = await session.call_tool("decide_held_change", {"tool_call_id": held["tool_call_id"],
                                                                         "decision": decision, "comment": "card"})
            again = await session.call_tool("decide_held_change", {"tool_call_id": held["tool_call_id"],
                                                                   "decision": "keep"})
            scene = await session.call_tool("scene_of_change", {"session_id": held["session_id"],
                                                                "tool_call_id": held["tool_call_id"]})
            stranger = await session.call_tool("scene_of_change", {"session_id": "no-such-session",
                                                                   "tool_call_id": held["tool_call_id"]})
            return held, refused, decided, again, results["call"], scene, stranger

    held, refused, decided, again, call, scene, stranger = anyio.run(scenario)
    assert stranger.is_error and "no session no-such-session" in stranger.structured_content["error"]
    if decision == "keep":  # the committed change's scene, a GLB with the renamed door marked
        assert scene.structured_content["ok"] is True, scene.structured_content
        glb = base64.b64decode(scene.structured_content["glb_base64"])
        assert glb[:4] == b"glTF" and scene.structured_content["summary"]["counts"]["modified"] >= 1
    else:
        assert scene.is_error and "was discarded" in scene.structured_content["error"]
    assert asked == []
    assert name in held["change_report"] and held["changes"]["modified"]
    assert held["image"] is None or held["image"]["mime_type"] == "image/png"
    assert refused.is_error and "mcp_not_mine" in refused.structured_content["error"]
    assert decided.structured_content == {"ok": True, "decision": decision, "tool_call_id": held["tool_call_id"]}
    assert again.is_error  # decided once, never twice
    result = call.structured_content
    assert meta_of(call)["ui"]["resourceUri"] == CARD_URI
    assert result["decision"]["decision"] == decision and result["decision"]["comment"] == "card"
    assert "review card" in result["decision"]["by"]
    if decision == "keep":
        assert result["committed"] is True and name in door_names(out), text_of(call)
    else:
        assert result["committed"] is False and name not in door_names(out)


def test_a_client_that_does_not_render_apps_gets_today_s_result_and_its_elicitation(sample_ifc, tmp_path):
    out = tmp_path / "out.ifc"

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"keep": True})

    async def scenario():
        async with stdio_session("--ifc", str(sample_ifc), "--out", str(out), "--db", str(tmp_path / "db.sqlite"),
                                 "--policy", "ask", elicitation_callback=elicit) as session:
            listed = {t.name for t in (await session.list_tools()).tools}
            call = await session.call_tool("execute_task_automation", {"code": RENAME.format(name="PLAIN")})
            none_held = await session.call_tool("review_held_change", {})
            return listed, call, none_held

    listed, call, none_held = anyio.run(scenario)
    assert "execute_task_automation" in listed and not listed & {"review_held_change", "decide_held_change"}
    result = call.structured_content
    assert result["committed"] is True and result["decision"] == {"decision": "keep", "by": "mcp", "comment": ""}
    assert text_of(call).startswith("{") and "PLAIN" in result["change_report"]
    assert none_held.structured_content == {"held": []}
    assert "PLAIN" in door_names(out)
