"""Issue 22, item 2, in Chromium: the chat page's host field and the admin Hosts tab show that the host holds
a change for a decision (by which session, since when), and Release discards it from there."""
from __future__ import annotations

from tests.e2e.conftest import open_chat
from tests.support.client import write_script
from tests.support.spine import BackgroundRun, automate, say, wait_until

SCRIPT = 'doc.add("Door", "D90", "Level 1")\nprint("added")\n'


def _held_run(server, alice, host, scripts_dir) -> tuple[str, BackgroundRun]:
    spec = write_script(scripts_dir / "held.json", [automate(SCRIPT), say("Released, nothing kept.")])
    session_id = alice.new_session(host.host_id, spec)
    assert alice.call("PUT", f"/api/sessions/{session_id}/policy", json={"policy": "ask"}).status_code in (200, 204)
    run = BackgroundRun(alice, session_id, "add a door")
    wait_until(lambda: any(f.chunk and f.chunk["type"] == "Metadata"
                           and f.chunk["metadata"].get("kind") == "approval_request" for f in list(run.frames)),
               timeout=30)
    return session_id, run


def test_the_chat_page_shows_a_held_change_and_releases_it(server, alice, host, scripts_dir, browser_factory):
    session_id, run = _held_run(server, alice, host, scripts_dir)
    browser = open_chat(browser_factory, server.url, alice, host.host_id, 1280, 860)
    page = browser.page
    activity = page.locator("#host-activity")
    activity.wait_for(state="visible", timeout=20_000)  # the host list is polled every few seconds
    assert "holding a change for Keep/Discard since" in activity.text_content()
    assert session_id in activity.locator(".pill").get_attribute("title")
    activity.locator("button", has_text="Release").click()
    stream = run.join(30)
    assert stream.last == {"type": "Complete", "content": "Released, nothing kept."}
    (result,) = stream.of("Metadata", "tool_result")
    assert result["metadata"]["committed"] is False and result["metadata"]["decision"]["by"] == "alice"
    activity.wait_for(state="hidden", timeout=20_000)
    assert not [e for e in host.document.elements.values() if e["name"] == "D90"]


def test_the_admin_hosts_tab_shows_the_state_and_an_admin_releases_it(server, alice, host, scripts_dir, browser):
    session_id, run = _held_run(server, alice, host, scripts_dir)
    browser.sign_in(server.url, server.token("root", admin=True), path="/admin#tab=hosts")
    page = browser.page
    page.wait_for_selector("body[data-ready='1']")
    row = page.locator("#hosts-table tbody tr", has_text=host.host_id)
    row.wait_for()
    assert "held" in row.text_content() and session_id in row.text_content()
    row.locator("button", has_text="Release").click()
    stream = run.join(30)
    (result,) = stream.of("Metadata", "tool_result")
    assert result["metadata"]["decision"]["decision"] == "discard"
    assert result["metadata"]["decision"]["by"] == "root"
    page.reload()  # the tab shows the state as of its last load: the run has ended since
    page.wait_for_selector("body[data-ready='1']")
    page.wait_for_function(
        "id => [...document.querySelectorAll('#hosts-table tbody tr')].some("
        "r => r.textContent.includes(id) && r.textContent.includes('idle'))", arg=host.host_id, timeout=20_000)
