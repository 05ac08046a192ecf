"""End to end in a real browser with the real IFC host: the script runs on IfcOpenShell and the file changes."""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

import ifcopenshell

from ifc_host import runtime, sample
from tests.support.client import write_script

RENUMBER_AND_MOVE = '''import ifcopenshell.api
import ifcopenshell.util.element as element
import ifcopenshell.util.placement as placement

doors = []
for door in model.by_type("IfcDoor"):
    storey = element.get_container(door)
    if storey is not None and storey.Name == "Level 1":
        doors.append(door)
doors.sort(key=lambda d: d.id())
for number, door in enumerate(doors, start=1):
    door.Tag = "E2E-%02d" % number
    print("#%d -> %s" % (door.id(), door.Tag))

# Slide the first door 0.4 m along x so the plan changes too.
first = doors[0]
matrix = placement.get_local_placement(first.ObjectPlacement)
matrix[0][3] += 0.4
ifcopenshell.api.run("geometry.edit_object_placement", model, product=first, matrix=matrix, is_si=True)
print("moved", first.Tag)
'''


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_conversation_on_the_ifc_host_really_changes_the_ifc_file(server, alice, scripts_dir, tmp_path,
                                                                    browser_factory):
    model_path = tmp_path / "building.ifc"
    sample.write_sample_model(model_path, storeys=2)
    before = _digest(model_path)
    host = runtime.start_host_thread(str(model_path), server.url, alice.token)
    try:
        host_id = host.wait_connected(30)
        spec = write_script(scripts_dir / "ifc.json", [
            [{"thinking": "Renumber the Level 1 doors and nudge the first one."},
             {"text": "I'll renumber the doors on **Level 1** and move the first door 0.4 m."},
             {"tool_call": {"name": "execute_task_automation", "input": {"code": RENUMBER_AND_MOVE}}}],
            [{"text": "Done: the doors on Level 1 are now E2E-01 onwards, and E2E-01 moved 0.4 m."}],
        ])
        browser = browser_factory(width=1100, height=1560)
        page = browser.page
        browser.sign_in(server.url, alice.token, query=f"&host={host_id}")
        browser.ready()
        assert page.locator("#host").input_value() == host_id
        page.fill("#model", spec)
        page.fill("#prompt", "Renumber the doors on Level 1 and move the first one a little")
        page.click("#send")
        page.wait_for_selector(".turn.assistant[data-state='complete']", timeout=60_000)

        card = page.locator(".tool-card")
        assert card.get_attribute("data-state") == "committed", card.text_content()
        report = card.locator(".change-report").text_content()
        assert "E2E-01" in report
        assert "#" in card.locator(".output").text_content()
        page.wait_for_function("() => { const i = document.querySelector('.view-image img');"
                               " return i && i.complete && i.naturalWidth > 0; }", timeout=30_000)
        assert "Level 1" in card.locator(".view-image figcaption").text_content()

        # The IFC file on disk really changed (the host saves commits back to it).
        deadline = time.monotonic() + 20
        while _digest(model_path) == before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _digest(model_path) != before
        changed = ifcopenshell.open(str(model_path))
        tags = sorted(d.Tag for d in changed.by_type("IfcDoor") if (d.Tag or "").startswith("E2E-"))
        assert tags and tags[0] == "E2E-01"

        page.evaluate("() => { document.querySelector('#conversation').scrollTop = "
                      "document.querySelector('.turn.user').offsetTop - 12; }")
        browser.screenshot("chat-page-ifc.png")
    finally:
        host.stop()
