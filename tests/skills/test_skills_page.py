"""In a real browser: "Save as skill" under a committed automation (parameters proposed from the script's
literals, the person ticks them), the team's skills in the conversations drawer, the admin's skills tab."""
from __future__ import annotations

from tests.e2e.conftest import open_chat
from tests.support.client import write_script
from tests.support.real_ifc import sample_host

SCRIPT = '''PREFIX = "S-"
LIMIT = 3
for door in sorted(model.by_type("IfcDoor"), key=lambda d: d.id())[:LIMIT]:
    door.Name = PREFIX + (door.Tag or "")
print("renamed", LIMIT)
'''


def test_save_as_skill_from_the_tool_card_and_see_it_listed(server, alice, scripts_dir, tmp_path, browser_factory):
    with sample_host(tmp_path / "building.ifc", server.url, alice.token, storeys=2) as (_, host_id):
        spec = write_script(scripts_dir / "skill.json", [
            [{"text": "Renaming."}, {"tool_call": {"name": "execute_task_automation", "input": {"code": SCRIPT}}}],
            [{"text": "Done."}]])
        browser = open_chat(browser_factory, server.url, alice, host_id, 1200, 1400)
        browser.send("Prefix the first doors", model=spec)
        page = browser.page
        card = page.locator(".tool-card").first
        assert card.get_attribute("data-state") == "committed"
        card.locator(".save-skill-open").click()
        page.wait_for_selector(".save-skill-form", timeout=20_000)
        boxes = card.locator("input[name=skill-parameter]")
        assert [boxes.nth(i).get_attribute("value") for i in range(boxes.count())] == ["PREFIX", "LIMIT"]
        assert boxes.nth(0).is_checked() and not boxes.nth(1).is_checked()  # text literals are offered ticked
        boxes.nth(1).check()
        card.locator("input[name=skill-name]").fill("First doors prefix")
        card.locator("textarea[name=skill-description]").fill("Prefix the names of the first doors")
        card.locator(".save-skill-form button.primary").click()
        page.wait_for_selector("text=Saved as skill “First doors prefix” v1", timeout=20_000)
        listed = alice.call("GET", "/api/skills").json()["skills"]
        assert [(s["name"], [p["name"] for p in s["parameters"]]) for s in listed] == [
            ("First doors prefix", ["PREFIX", "LIMIT"])]
        page.wait_for_selector("#skill-list [data-skill='First doors prefix']", state="attached", timeout=20_000)
        assert "never run" in page.locator("#skill-list").text_content()
        assert browser.errors == []

        admin = server.token("root", admin=True)
        console = browser_factory()
        console.sign_in(server.url, admin, path="/admin#tab=skills")
        console.page.wait_for_selector("#skills-panel h2", timeout=60_000)
        assert "No teams defined" in console.page.locator("#skills-panel").text_content()
        console.page.wait_for_selector("#skills-panel [data-skill='First doors prefix']", timeout=20_000)
        assert console.errors == []
