"""The 3D viewer in a real browser over a real IFC host: the card's toggle opens it on the result's scene, the
changed elements are highlighted (as many as the change report counts), a click on an element shows its
GlobalId and before → after, Before shows a deleted and a moved element as ghosts at their old place, the
change report's lines select their element, and it all fits the 400 px layout."""
from __future__ import annotations

import re

import pytest

from cloud.web.scene_api import three_dir
from tests.e2e.conftest import open_chat
from tests.support.client import write_script
from tests.support.real_ifc import connected_host, sample_host
from tests.test_scene_api import CHANGE

RENAMED = "renamed by the scene test"


@pytest.fixture(autouse=True)
def _three_installed() -> None:
    if not (three_dir() / "build" / "three.module.js").is_file():
        pytest.fail(f"the viewer needs three.js at {three_dir()}: run `npm ci` (scripts/test does)", pytrace=False)


def test_the_3d_toggle_opens_a_viewer_of_the_change_with_highlights_clicks_ghosts_and_the_narrow_layout(
        server, alice, scripts_dir, tmp_path, browser_factory):
    with sample_host(tmp_path / "building.ifc", server.url, alice.token, storeys=2) as (_, host_id):
        spec = write_script(scripts_dir / "scene.json", [
            [{"text": "Deleting a door, moving a column, renaming a window."},
             {"tool_call": {"name": "execute_task_automation", "input": {"code": CHANGE}}}],
            [{"text": "Done."}],
        ])
        browser = open_chat(browser_factory, server.url, alice, host_id, 1200, 1400)
        browser.send("Change three elements", model=spec)
        page = browser.page
        card = page.locator(".tool-card").first
        assert card.get_attribute("data-state") == "committed", card.text_content()
        image_src = card.locator(".view-image img").get_attribute("src")
        session_id = re.match(r"/api/sessions/([^/]+)/images/", image_src).group(1)
        result = alice.call("GET", f"/api/sessions/{session_id}/results/{card.get_attribute('data-tool-call-id')}").json()
        reported = sum(len(result["changes"][k]) for k in ("added", "modified", "deleted"))

        card.locator(".scene-toggle").click()
        viewer = card.locator(".scene-viewer")
        page.wait_for_function("() => { const v = document.querySelector('.scene-viewer');"
                               " return v && (v.dataset.state === 'ready' || v.dataset.state === 'error'); }",
                               timeout=180_000)
        assert viewer.get_attribute("data-state") == "ready", viewer.text_content()
        assert int(viewer.get_attribute("data-highlighted")) == reported
        assert int(viewer.get_attribute("data-elements")) > 40

        # Click the renamed window where it is the first thing under the pointer: its GlobalId and before → after.
        window = page.evaluate("""(renamed) => { const v = document.querySelector('.scene-viewer').sceneViewer;
            const r = v.changed.find((e) => e.extras.name === renamed); v.fit([r]);
            return {id: r.name, step: r.extras.step_id}; }""", RENAMED)
        viewer.locator("canvas").scroll_into_view_if_needed()  # the composer covers the bottom of the conversation
        point = None
        for _ in range(60):  # the fitted frame is drawn on the next animation frame (slow on a loaded machine)
            page.wait_for_timeout(200)
            point = page.evaluate("(id) => document.querySelector('.scene-viewer').sceneViewer.visiblePointOf(id)",
                                  window["id"])
            if point:
                break
        assert point, "the renamed window is nowhere the first thing a click hits"
        page.mouse.click(point["x"], point["y"])
        info = viewer.locator(".scene-info")
        assert info.locator(".scene-global-id").text_content() == window["id"]
        assert RENAMED in info.locator(".scene-diff .diff-new").all_text_contents()

        # Before: the deleted door and the moved element are ghosts at their old place.
        deleted = list(result["changes"]["deleted"])
        ghosts_expected = page.evaluate("""() => { const v = document.querySelector('.scene-viewer').sceneViewer;
            return v.changed.filter((e) => e.meshes.length && (e.extras.change === 'deleted' || e.ghost))
                            .map((e) => [e.extras.change, e.name]); }""")
        assert {kind for kind, _ in ghosts_expected} == {"deleted", "modified"}, ghosts_expected
        viewer.locator(".scene-before").click()
        assert viewer.get_attribute("data-mode") == "before"
        assert sorted(viewer.get_attribute("data-ghosts").split()) == sorted(name for _, name in ghosts_expected)
        page.wait_for_timeout(300)
        browser.screenshot("scene-viewer.png")
        viewer.locator(".scene-before").click()
        assert viewer.get_attribute("data-mode") == "after" and viewer.get_attribute("data-ghosts") == ""

        # A change-report line names its element (#step id): clicking it selects that element in the viewer.
        line = card.locator("pre.change-report .scene-link").first
        line.click()
        assert viewer.get_attribute("data-selected") == page.evaluate(
            "(id) => document.querySelector('.scene-viewer').sceneViewer.byStepId.get(id).name",
            int(line.get_attribute("data-element-id")))
        assert any(int(i) == int(line.get_attribute("data-element-id")) for i in
                   [*result["changes"]["modified"], *deleted, *result["changes"]["added"]])

        # Section box and storey isolation change what is drawn, and say so.
        viewer.locator(".scene-section").click()
        assert viewer.get_attribute("data-section") == "on"
        storey = viewer.locator(".scene-storey option").nth(1).get_attribute("value")
        viewer.locator(".scene-storey").select_option(storey)
        shown = page.evaluate("""(storey) => { const elements = document.querySelector('.scene-viewer').sceneViewer.elements;
            return [elements.filter((e) => e.extras.storey === storey && e.object.visible).length,
                    elements.filter((e) => e.extras.storey !== storey && e.object.visible).length]; }""", storey)
        assert shown[0] > 20 and shown[1] == 0, shown

        # The 400 px layout: the viewer, its toolbar and its canvas fit without sideways scrolling.
        page.set_viewport_size({"width": 400, "height": 900})
        page.wait_for_timeout(500)
        layout = page.evaluate("""() => { const v = document.querySelector('.scene-viewer');
            const boxes = [...v.querySelectorAll('.scene-toolbar > *, canvas')].map((e) => e.getBoundingClientRect());
            return {scroll: document.documentElement.scrollWidth, canvas: v.querySelector('canvas').clientWidth,
                    right: Math.max(...boxes.map((b) => b.right)), left: Math.min(...boxes.map((b) => b.left))}; }""")
        assert layout["scroll"] <= 400 and 200 <= layout["canvas"] <= 400, layout
        assert layout["left"] >= 0 and layout["right"] <= 400, layout
        browser.screenshot("scene-viewer-400.png")


def test_a_change_held_under_ask_has_the_3d_toggle_in_its_approval_card_in_the_400_px_pane(
        server, alice, scripts_dir, tmp_path, browser_factory):
    """The approval card (a change held under `ask`) opens the held model's scene at the pane's width, with the
    change report's count highlighted; Keep replaces it by the committed card, whose toggle opens the kept scene."""
    with sample_host(tmp_path / "building.ifc", server.url, alice.token, storeys=2) as (_, host_id):
        spec = write_script(scripts_dir / "held-scene.json", [
            [{"tool_call": {"name": "execute_task_automation", "input": {"code": CHANGE}}}],
            [{"text": "Kept."}],
        ])
        browser = open_chat(browser_factory, server.url, alice, host_id, 400, 900)  # Revit's dockable pane
        page = browser.page
        page.fill("#model", spec)
        page.select_option("#policy", "ask")
        browser.ask("Change three elements, asking me first")
        card = page.locator(".tool-card").first
        approval = card.locator(".approval")
        approval.wait_for(timeout=180_000)
        assert card.get_attribute("data-state") == "awaiting"

        toggle = approval.locator(".scene-toggle")
        toggle.click()
        viewer = approval.locator(".scene-viewer")
        page.wait_for_function("() => { const v = document.querySelector('.approval .scene-viewer');"
                               " return v && (v.dataset.state === 'ready' || v.dataset.state === 'error'); }",
                               timeout=180_000)
        assert viewer.get_attribute("data-state") == "ready", viewer.text_content()
        highlighted = int(viewer.get_attribute("data-highlighted"))
        pills = approval.locator(".changes .pill").all_text_contents()
        assert highlighted == sum(int(p.split()[0]) for p in pills) >= 3, pills
        line = approval.locator("pre.change-report .scene-link").first
        line.click()
        assert viewer.get_attribute("data-selected")

        layout = page.evaluate("""() => { const v = document.querySelector('.approval .scene-viewer');
            const boxes = [...v.querySelectorAll('.scene-toolbar > *, canvas')].map((e) => e.getBoundingClientRect());
            return {scroll: document.documentElement.scrollWidth, canvas: v.querySelector('canvas').clientWidth,
                    right: Math.max(...boxes.map((b) => b.right)), left: Math.min(...boxes.map((b) => b.left))}; }""")
        assert layout["scroll"] <= 400 and 200 <= layout["canvas"] <= 400, layout
        assert layout["left"] >= 0 and layout["right"] <= 400, layout
        browser.screenshot("scene-viewer-held-400.png")

        approval.locator("button", has_text="Keep").click()
        page.wait_for_selector(".turn.assistant[data-state='complete']", timeout=180_000)
        assert card.get_attribute("data-state") == "committed"
        assert card.locator(".approval").count() == 0 and card.locator(".scene-viewer").count() == 0
        session_id = re.match(r"/api/sessions/([^/]+)/images/",
                              card.locator(".view-image img").get_attribute("src")).group(1)
        result = alice.call("GET", f"/api/sessions/{session_id}/results/{card.get_attribute('data-tool-call-id')}").json()
        assert highlighted == sum(len(result["changes"][k]) for k in ("added", "modified", "deleted"))
        card.locator(".scene-toggle").click()
        page.wait_for_function("() => { const v = document.querySelector('.tool-card .scene-viewer');"
                               " return v && (v.dataset.state === 'ready' || v.dataset.state === 'error'); }",
                               timeout=180_000)
        assert int(card.locator(".scene-viewer").get_attribute("data-highlighted")) == highlighted


def test_a_discarded_change_keeps_its_3d_toggle_which_says_why_there_is_no_scene(
        server, alice, scripts_dir, tmp_path, browser_factory):
    with sample_host(tmp_path / "building.ifc", server.url, alice.token, storeys=1) as (_, host_id):
        spec = write_script(scripts_dir / "discarded-scene.json", [
            [{"tool_call": {"name": "execute_task_automation", "input": {"code": CHANGE}}}],
            [{"text": "Discarded."}],
        ])
        browser = open_chat(browser_factory, server.url, alice, host_id, 1000, 900)
        page = browser.page
        page.fill("#model", spec)
        page.select_option("#policy", "ask")
        browser.ask("Change three elements, asking me first")
        card = page.locator(".tool-card").first
        card.locator(".approval .scene-toggle").wait_for(timeout=180_000)
        card.locator(".approval button", has_text="Discard").click()
        page.wait_for_selector(".turn.assistant[data-state='complete']", timeout=180_000)
        assert card.get_attribute("data-state") == "discarded"
        assert card.locator(".view-image img").count() == 1
        card.locator(".scene-toggle").click()
        assert "was discarded" in card.locator(".scene-box .scene-error").text_content()


UNFILL_A_DOOR = '''door = sorted((d for d in model.by_type("IfcDoor") if d.FillsVoids), key=lambda d: d.id())[0]
for rel in list(door.FillsVoids):
    model.remove(rel)
door.Description = "taken out of its opening"
print("unfilled", door.id())
'''


def test_a_validation_finding_opens_the_3d_view_and_selects_its_element(
        server, alice, scripts_dir, tmp_path, browser_factory):
    """A finding naming an element (validation's, under `warn`) is a link: clicking it with the viewer closed
    opens it and selects that element."""
    with sample_host(tmp_path / "building.ifc", server.url, alice.token, storeys=1) as (_, host_id):
        spec = write_script(scripts_dir / "finding-scene.json", [
            [{"tool_call": {"name": "execute_task_automation", "input": {"code": UNFILL_A_DOOR}}}],
            [{"text": "The door fills no opening now."}],
        ])
        browser = open_chat(browser_factory, server.url, alice, host_id, 1200, 1400)
        browser.send("Take the first door out of its opening", model=spec)
        page = browser.page
        card = page.locator(".tool-card").first
        assert card.get_attribute("data-state") == "committed", card.text_content()
        door_id = int(re.search(r"unfilled (\d+)", card.text_content()).group(1))
        finding = card.locator(f".failures .finding-link[data-element-ids='{door_id}']")
        assert "filling without an opening" in finding.text_content()
        assert card.locator(".scene-viewer").count() == 0  # closed until the finding is clicked

        finding.click()
        page.wait_for_function("() => { const v = document.querySelector('.scene-viewer');"
                               " return v && (v.dataset.state === 'ready' || v.dataset.state === 'error'); }",
                               timeout=180_000)
        viewer = card.locator(".scene-viewer")
        assert viewer.get_attribute("data-state") == "ready", viewer.text_content()
        assert card.locator(".scene-toggle").get_attribute("aria-expanded") == "true"
        door_global_id = page.evaluate(
            "(id) => document.querySelector('.scene-viewer').sceneViewer.byStepId.get(id).name", door_id)
        assert viewer.get_attribute("data-selected") == door_global_id
        assert viewer.locator(".scene-info .scene-global-id").text_content() == door_global_id


def test_a_federated_session_s_viewer_shows_its_reference_greyed_and_clickable_and_a_toggle_hides_it(
        server, alice, scripts_dir, tmp_path, browser_factory):
    """The session's reference model is in the scene as context: greyed and see-through, not highlighted (the
    highlighted count is still the change report's), a click on it names its model, and References hides it."""
    from cloud.session_refs import save_refs
    from ifc_host.sample import write_sample_model
    from tests.ifc_host.test_scene_references import georeferenced

    building, reference = tmp_path / "building.ifc", tmp_path / "refs" / "MEP.ifc"
    write_sample_model(building, storeys=2)
    georeferenced(building, 0.0)
    write_sample_model(reference, storeys=2, seed=7)
    georeferenced(reference, 40.0)  # beside the building, so that a click reaches it
    with connected_host(building, server.url, alice.token) as (_, host_id):
        session_id = alice.new_session(host_id, write_script(scripts_dir / "federated-scene.json", [
            [{"tool_call": {"name": "execute_task_automation", "input": {"code": CHANGE}}}], [{"text": "done"}]]))
        save_refs(server.state.store, session_id, [{"name": "MEP.ifc", "path": str(reference)}])
        result = alice.run(session_id, "go").of("Metadata", "tool_result")[0]["metadata"]
        assert result["committed"], result
        reported = sum(len(result["changes"][k]) for k in ("added", "modified", "deleted"))

        browser = open_chat(browser_factory, server.url, alice, host_id, 1000, 1200)
        page = browser.page
        page.evaluate("""async (url) => { const box = document.createElement('div'); box.id = 'federated';
            box.style.width = '900px'; document.body.prepend(box);
            const { openViewer } = await import('/static/js/scene_viewer.js'); await openViewer(box, url); }""",
                      f"/api/sessions/{session_id}/results/{result['tool_call_id']}/scene")
        viewer = page.locator("#federated")
        assert viewer.get_attribute("data-state") == "ready", viewer.text_content()
        references = int(viewer.get_attribute("data-references"))
        assert references > 40 and int(viewer.get_attribute("data-highlighted")) == reported
        assert viewer.get_attribute("data-references-shown") == "on"
        assert "in reference models (MEP.ifc)" in viewer.locator(".scene-legend").text_content()
        looks = page.evaluate("""() => { const v = document.querySelector('#federated').sceneViewer;
            const m = v.references.flatMap((r) => r.meshes.map((mesh) => mesh.material));
            return {models: [...new Set(v.references.map((r) => r.extras.model))],
                    changed: v.references.filter((r) => r.extras.change).length,
                    inChanged: v.changed.filter((r) => r.reference).length,
                    opacities: [...new Set(m.map((x) => x.opacity))], colours: [...new Set(m.map((x) => x.color.getHex()))]}; }""")
        assert looks["models"] == ["MEP.ifc"] and looks["changed"] == 0 and looks["inChanged"] == 0, looks
        assert looks["opacities"] == [0.3] and len(looks["colours"]) == 1, looks  # one grey, see-through

        # Fit all, then click a reference element where it is what a click picks: its model is named.
        viewer.locator(".scene-fit-all").click()
        viewer.scroll_into_view_if_needed()
        point = None
        for _ in range(60):
            page.wait_for_timeout(200)
            point = page.evaluate("""() => { const v = document.querySelector('#federated').sceneViewer;
                for (const r of v.references.filter((e) => e.meshes.length && e.extras.ifc_class === 'IfcWall')) {
                  const p = v.visiblePointOf(r); if (p) return {...p, id: r.name}; }
                return null; }""")
            if point:
                break
        assert point, "no reference wall is anywhere a click picks"
        page.mouse.click(point["x"], point["y"])
        info = viewer.locator(".scene-info")
        assert info.locator(".scene-global-id").text_content() == point["id"]
        assert "MEP.ifc (reference model, read-only)" in info.text_content()
        assert "null" not in info.text_content()  # before: an element without before → after said "null"

        viewer.locator(".scene-references").click()
        assert viewer.get_attribute("data-references-shown") == "off"
        assert page.evaluate("() => document.querySelector('#federated').sceneViewer.references"
                             ".filter((r) => r.object.visible).length") == 0
        viewer.locator(".scene-references").click()
        assert viewer.get_attribute("data-references-shown") == "on"
        browser.screenshot("scene-viewer-references.png")


def test_a_revit_session_s_3d_toggle_says_there_is_no_revit_scene_yet(server, alice, scripts_dir, browser_factory,
                                                                      monkeypatch):
    """Revit answers "no scene" until a Revit glTF exporter exists, and the card says so where the viewer would be
    (the fake Revit behind the real server)."""
    from tests.revit.conftest import LIB

    monkeypatch.syspath_prepend(str(LIB))  # the extension's runtime, as tests/revit's own tests have it
    from tests.revit.harness import start_revit_host
    from tests.revit.test_show_in_revit_page import RENAME_DOORS
    from tests.support.spine import automate, say

    revit = start_revit_host(server.url, alice.token)
    try:
        spec = write_script(scripts_dir / "revit-scene.json", [automate(RENAME_DOORS), say("Renamed.")])
        browser = open_chat(browser_factory, server.url, alice, revit.host_id, 1000, 900)
        browser.send("rename the doors on level 1", model=spec)
        page = browser.page
        card = page.locator(".tool-card").first
        assert card.get_attribute("data-state") == "committed", card.text_content()
        card.locator(".scene-toggle").click()
        page.wait_for_function("() => { const v = document.querySelector('.scene-viewer');"
                               " return v && (v.dataset.state === 'ready' || v.dataset.state === 'error'); }",
                               timeout=60_000)
        box = card.locator(".scene-viewer")
        assert box.get_attribute("data-state") == "error"
        assert "Revit hosts cannot send a 3D scene yet" in box.locator(".scene-error").text_content()
        assert card.locator(".scene-viewer canvas").count() == 0
    finally:
        revit.stop()
