"""End to end in a real browser with the real IFC host: the script runs on IfcOpenShell and the file changes."""
from __future__ import annotations

import time

import ifcopenshell

from ifc_host import sample
from tests.e2e.conftest import open_chat
from tests.support.client import write_script
from tests.support.real_ifc import connected_host, digest

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


def test_a_conversation_on_the_ifc_host_really_changes_the_ifc_file(server, alice, scripts_dir, tmp_path,
                                                                    browser_factory, monkeypatch):
    # Its screenshot is the README's (docs/screenshots/chat-page.png): the model field shows the spec as
    # typed, so it names the script relative to the server's working folder, not by a test's temporary path.
    monkeypatch.chdir(scripts_dir)
    model_path = tmp_path / "building.ifc"
    sample.write_sample_model(model_path, storeys=2)
    before = digest(model_path)
    with connected_host(model_path, server.url, alice.token) as (_, host_id):
        write_script(scripts_dir / "ifc.json", [
            [{"thinking": "Renumber the Level 1 doors and nudge the first one."},
             {"text": "I'll renumber the doors on **Level 1** and move the first door 0.4 m."},
             {"tool_call": {"name": "execute_task_automation", "input": {"code": RENUMBER_AND_MOVE}}}],
            [{"text": "Done: the doors on Level 1 are now E2E-01 onwards, and E2E-01 moved 0.4 m."}],
        ])
        browser = open_chat(browser_factory, server.url, alice, host_id, 1100, 1560)
        page = browser.page
        assert page.locator("#host").input_value() == host_id
        browser.send("Renumber the doors on Level 1 and move the first one a little", model="scripted:ifc.json")

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
        while digest(model_path) == before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert digest(model_path) != before
        changed = ifcopenshell.open(str(model_path))
        tags = sorted(d.Tag for d in changed.by_type("IfcDoor") if (d.Tag or "").startswith("E2E-"))
        assert tags and tags[0] == "E2E-01"

        page.evaluate("() => { document.querySelector('#conversation').scrollTop = "
                      "document.querySelector('.turn.user').offsetTop - 12; }")
        browser.screenshot("chat-page-ifc.png")
