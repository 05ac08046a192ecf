"""Before → after in a real browser: the tool card's diff view over a real IFC host, and the validation
setting chosen on the page rolling back a script that breaks the schema."""
from __future__ import annotations

import time

import ifcopenshell

from tests.e2e.conftest import open_chat
from tests.support.client import write_script
from tests.support.real_ifc import digest, sample_host

RENUMBER_AND_MOVE = '''import ifcopenshell.api
import ifcopenshell.util.element as element
import ifcopenshell.util.placement as placement

doors = sorted((d for d in model.by_type("IfcDoor") if (element.get_container(d).Name or "") == "Level 1"),
               key=lambda d: d.id())
for number, door in enumerate(doors[:3], start=1):
    door.Tag = "DIFF-%02d" % number
walls = sorted(model.by_type("IfcWall"), key=lambda w: w.id())[:2]
for wall in walls:
    matrix = placement.get_local_placement(wall.ObjectPlacement)
    matrix[0][3] += 0.5 / ifcopenshell.util.unit.calculate_unit_scale(model)
    ifcopenshell.api.run("geometry.edit_object_placement", model, product=wall, matrix=matrix, is_si=False)
print("changed", [d.id() for d in doors[:3]], [w.id() for w in walls])
'''
RENAME_WALLS = 'for wall in sorted(model.by_type("IfcWall"), key=lambda w: w.id())[:2]:\n    wall.Name = "Reviewed " + wall.Name\n'
BREAK_SCHEMA = '''storey = model.by_type("IfcBuildingStorey")[0]
model.createIfcRelAggregates(ifcopenshell.guid.new(), None, "empty", None, storey, [])
print("added an empty aggregation")
'''


def test_the_diff_view_shows_old_and_new_values_and_block_rolls_back(server, alice, scripts_dir, tmp_path,
                                                                     browser_factory):
    model_path = tmp_path / "building.ifc"
    with sample_host(model_path, server.url, alice.token, storeys=2) as (_, host_id):
        spec = write_script(scripts_dir / "diff.json", [
            [{"text": "Renumbering three doors and moving two walls."},
             {"tool_call": {"name": "execute_task_automation", "input": {"code": RENUMBER_AND_MOVE}}}],
            [{"text": "Done."}],
            [{"text": "Adding the aggregation."},
             {"tool_call": {"name": "execute_task_automation", "input": {"code": BREAK_SCHEMA}}}],
            [{"text": "Validation rolled that back."}],
            [{"text": "Renaming the walls for your review."},
             {"tool_call": {"name": "execute_task_automation", "input": {"code": RENAME_WALLS}}}],
            [{"text": "Kept."}],
        ])
        browser = open_chat(browser_factory, server.url, alice, host_id, 1200, 1600)
        browser.send("Renumber the first Level 1 doors and move two walls", model=spec)
        page = browser.page

        card = page.locator(".tool-card").first
        assert card.get_attribute("data-state") == "committed", card.text_content()
        diff = card.locator(".change-diff")
        groups = diff.locator(".diff-groups li")
        kinds = [groups.nth(i).get_attribute("data-kinds") for i in range(groups.count())]
        assert "placement" in kinds and "attributes" in kinds
        assert "2 IfcWall" in diff.locator(".diff-groups li[data-kinds='placement']").text_content()
        rows = diff.locator(".diff-table tbody tr")
        tags = {(rows.nth(i).locator(".diff-old").text_content(), rows.nth(i).locator(".diff-new").text_content())
                for i in range(rows.count()) if rows.nth(i).locator(".diff-key").text_content() == "Tag"}
        assert len(tags) == 3 and all(new.startswith("DIFF-0") and old.startswith("D") for old, new in tags)
        moved = [rows.nth(i) for i in range(rows.count()) if rows.nth(i).locator(".diff-key").text_content() == "placement"]
        assert len(moved) >= 2 and all(r.locator(".diff-old").text_content() != r.locator(".diff-new").text_content()
                                       for r in moved)
        # The new values are green, the old red: the page's stylesheet reached the table.
        colours = page.evaluate("""() => [...document.querySelectorAll('.diff-old, .diff-new')].slice(0, 2)
                                   .map((cell) => getComputedStyle(cell).backgroundColor)""")
        assert len(set(colours)) == 2 and "rgba(0, 0, 0, 0)" not in colours
        assert "no new errors" in diff.locator(".pill").text_content()
        page.wait_for_function("() => { const i = document.querySelector('.view-image img');"
                               " return i && i.complete && i.naturalWidth > 0; }", timeout=30_000)
        browser.screenshot("change-diff.png")

        # Validation set to block on the page: a script that breaks the schema is rolled back.
        deadline = time.monotonic() + 20
        committed = digest(model_path)
        page.select_option("#validation", "block")
        page.wait_for_timeout(300)
        page.fill("#prompt", "Add an empty aggregation to the first storey")
        page.click("#send")
        page.wait_for_function("() => document.querySelectorAll('.turn.assistant[data-state=\"complete\"]').length >= 2",
                               timeout=60_000)
        second = page.locator(".tool-card").nth(1)
        assert second.get_attribute("data-state") == "rolled-back", second.text_content()
        assert "ValidationFailed" in second.locator(".error-box").text_content()
        assert "IfcRelAggregates.RelatedObjects" in second.locator(".failures").text_content()
        while time.monotonic() < deadline and digest(model_path) != committed:
            time.sleep(0.1)
        assert digest(model_path) == committed
        reopened = ifcopenshell.open(str(model_path))
        assert not [r for r in reopened.by_type("IfcRelAggregates") if r.Name == "empty"]
        assert sorted(d.Tag for d in reopened.by_type("IfcDoor") if (d.Tag or "").startswith("DIFF-")) == \
            ["DIFF-01", "DIFF-02", "DIFF-03"]

        # Under "ask" the person reviews the held change with the same before → after view, then keeps it.
        page.select_option("#policy", "ask")
        page.select_option("#validation", "warn")
        page.wait_for_timeout(300)
        page.fill("#prompt", "Rename the first two walls")
        page.click("#send")
        review = page.locator(".approval .change-diff")
        review.wait_for(timeout=60_000)
        assert "2 IfcWall" in review.locator(".diff-groups").text_content()
        names = [review.locator(".diff-new").nth(i).text_content() for i in range(2)]
        assert all(name.startswith("Reviewed ") for name in names)
        page.locator(".approval button.primary").click()
        page.wait_for_function("() => document.querySelectorAll('.turn.assistant[data-state=\"complete\"]').length >= 3",
                               timeout=60_000)
        assert page.locator(".tool-card").nth(2).get_attribute("data-state") == "committed"
