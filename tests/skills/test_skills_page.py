"""In a real browser: "Save as skill" under a committed automation (parameters proposed from the script's
literals, the person ticks them), the team's skills in the conversations drawer, the admin's skills tab."""
from __future__ import annotations

from ifc_host import runtime, sample
from tests.support.client import write_script

SCRIPT = '''PREFIX = "S-"
LIMIT = 3
for door in sorted(model.by_type("IfcDoor"), key=lambda d: d.id())[:LIMIT]:
    door.Name = PREFIX + (door.Tag or "")
print("renamed", LIMIT)
'''


def test_save_as_skill_from_the_tool_card_and_see_it_listed(server, alice, scripts_dir, tmp_path, browser_factory):
    model_path = tmp_path / "building.ifc"
    sample.write_sample_model(model_path, storeys=2)
    host = runtime.start_host_thread(str(model_path), server.url, alice.token)
    try:
        host_id = host.wait_connected(30)
        spec = write_script(scripts_dir / "skill.json", [
            [{"text": "Renaming."}, {"tool_call": {"name": "execute_task_automation", "input": {"code": SCRIPT}}}],
            [{"text": "Done."}]])
        assert alice.call("GET", "/api/models", timeout=120).status_code == 200
        browser = browser_factory(width=1200, height=1400)
        page = browser.page
        browser.sign_in(server.url, alice.token, query=f"&host={host_id}")
        browser.ready()
        page.fill("#model", spec)
        page.fill("#prompt", "Prefix the first doors")
        page.click("#send")
        page.wait_for_selector(".turn.assistant[data-state='complete']", timeout=60_000)
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
    finally:
        host.stop()
