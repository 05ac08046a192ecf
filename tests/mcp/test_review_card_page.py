"""The review card itself in Chromium (issue 28, item 4): a minimal MCP Apps host written here renders the card
from resources/read in a sandboxed iframe and relays its JSON-RPC (ui/initialize, tools/call) to `nexus mcp
--ifc --policy ask` on the real IFC host through the official `mcp` client; the person opens the held change's
3D view (three.js inlined in the card, the scene by a tool call), clicks Keep in the card and the model file
changes."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ifcopenshell
import pytest
from anyio.from_thread import start_blocking_portal

from cloud.mcp.apps import CARD_URI, EXTENSION_ID, MIME_TYPE
from tests.e2e import conftest as e2e
from tests.mcp.support import stdio_session

browser_factory = e2e.browser_factory  # the e2e fixtures (Debian's Chromium through Playwright)
playwright_driver = e2e.playwright_driver

# The host side of MCP Apps, as small as it gets: the card in a sandboxed iframe, its requests answered
# (ui/initialize here, tools/call through the test's MCP client), notifications sent with window.toCard.
HOST_PAGE = """<!doctype html><html><body>
<iframe id="card" sandbox="allow-scripts" style="width: 700px; height: 900px"></iframe>
<script>
const frame = document.getElementById("card");
window.hostLog = [];
window.toCard = (message) => frame.contentWindow.postMessage({ jsonrpc: "2.0", ...message }, "*");
window.addEventListener("message", async (event) => {
  if (event.source !== frame.contentWindow) return;
  const m = event.data;
  window.hostLog.push(m.method || "reply");
  if (m.method === "ui/initialize") {
    window.toCard({ id: m.id, result: { protocolVersion: m.params.protocolVersion,
      hostInfo: { name: "test host", version: "1" }, hostCapabilities: { serverTools: {} }, hostContext: {} } });
  } else if (m.method === "ui/notifications/initialized") {
    window.cardReady = true;
  } else if (m.method === "tools/call") {
    const answer = JSON.parse(await window.mcpCall(JSON.stringify(m.params)));
    window.toCard({ id: m.id, ...(answer.error ? { error: answer.error } : { result: answer }) });
  }
});
window.showCard = (html) => { frame.srcdoc = html; };
</script></body></html>"""


@pytest.fixture(scope="module")
def sample_ifc(tmp_path_factory) -> Path:
    from ifc_host.sample import write_sample_model

    path = tmp_path_factory.mktemp("mcp_card_page") / "sample.ifc"
    write_sample_model(str(path), storeys=1)
    return path


def test_keep_clicked_in_the_card_commits_the_held_change(sample_ifc, tmp_path, browser_factory):  # noqa: F811
    out = tmp_path / "out.ifc"
    with start_blocking_portal() as portal:
        session = portal.wrap_async_context_manager(stdio_session(
            "--ifc", str(sample_ifc), "--out", str(out), "--db", str(tmp_path / "db.sqlite"), "--policy", "ask",
            extensions={EXTENSION_ID: {"mimeTypes": [MIME_TYPE]}}))
        with session as client:
            tools = {t.name: t for t in portal.call(client.list_tools).tools}
            uri = tools["execute_task_automation"].model_dump(by_alias=True)["_meta"]["ui"]["resourceUri"]
            assert uri == CARD_URI
            (card,) = portal.call(client.read_resource, uri).contents
            assert card.mime_type == MIME_TYPE

            calls: list[str] = []

            def mcp_call(params_json: str) -> str:
                params = json.loads(params_json)
                calls.append(params["name"])
                result = portal.call(client.call_tool, params["name"], params.get("arguments") or {})
                return json.dumps(result.model_dump(by_alias=True, mode="json", exclude_none=True))

            browser = browser_factory(width=760, height=960)
            page = browser.page
            page.expose_function("mcpCall", mcp_call)
            page.set_content(HOST_PAGE)
            arguments = {"code": "model.by_type('IfcDoor')[0].Name = 'FROM_THE_CARD'\n"}
            running = portal.start_task_soon(client.call_tool, "execute_task_automation", arguments)
            page.evaluate("html => window.showCard(html)", card.text)
            page.wait_for_function("window.cardReady === true", timeout=30_000)
            page.evaluate("args => window.toCard({ method: 'ui/notifications/tool-input', params: { arguments: args } })",
                          arguments)

            view = page.frame_locator("#card")
            view.locator("#keep").wait_for(state="visible", timeout=90_000)  # the held change came in
            assert "FROM_THE_CARD" in view.locator("#held-report").text_content()
            assert "modified" in view.locator("#held-counts").text_content()
            assert "review_held_change" in calls and not out.exists()

            # The 3D view of the held change, inlined three.js, its scene by the app-only tool scene_of_change.
            view.locator("#scene-toggle").click()
            box = view.locator("#scene-box")
            pump_until(page, lambda: box.get_attribute("data-state") in ("ready", "error"), 240)
            assert box.get_attribute("data-state") == "ready", box.text_content()
            assert "scene_of_change" in calls
            assert box.get_attribute("data-highlighted") == "1"  # the renamed door, as the report counts it
            assert view.locator("#scene-box canvas").count() == 1
            view.locator("#keep").click()
            pump_until(page, running.done, 90)
            result = running.result()
            assert "decide_held_change" in calls
            assert result.structured_content["committed"] is True
            assert "review card" in result.structured_content["decision"]["by"]

            page.evaluate("r => window.toCard({ method: 'ui/notifications/tool-result', params: r })",
                          result.model_dump(by_alias=True, mode="json", exclude_none=True))
            pump_until(page, lambda: view.locator("#state").text_content() == "committed", 30)
            assert "Committed." in view.locator("#outcome").text_content()
            if any(c.type == "image" for c in result.content):
                assert view.locator("[data-nexus-scene-slot] img").get_attribute("src").startswith("data:image/png")
            assert not browser.errors
    names = {d.Name for d in ifcopenshell.open(str(out)).by_type("IfcDoor")}
    assert "FROM_THE_CARD" in names


def pump_until(page: Any, condition: Any, timeout_s: float) -> None:
    """Wait while Playwright keeps serving the page (the card's tools/call reach Python only then)."""
    for _ in range(int(timeout_s * 10)):
        if condition():
            return
        page.wait_for_timeout(100)
    raise AssertionError("condition not met in time")
