"""Issue 14 item 1 in Chromium: the chat page shows runs waiting for the person's decision in any of their
sessions (started elsewhere: another device, or a closed tab), and the badge goes once they decide."""
from __future__ import annotations

import pytest

from tests.e2e.conftest import browser, browser_factory, playwright_driver  # noqa: F401 (fixtures)
from tests.support.client import Client, write_script
from tests.support.spine import BackgroundRun, automate, say
from tests.support.test_host import TestHost
from tests.support.waiting import wait_until


@pytest.fixture
def host(server, alice):
    running = TestHost(server.ws_url, alice.token).start()
    yield running
    running.stop()


def test_a_run_waiting_for_a_decision_elsewhere_shows_a_badge_and_in_the_conversation_list(
        server, alice: Client, host, scripts_dir, browser):  # noqa: F811
    spec = write_script(scripts_dir / "ask.json", [automate("doc.add('Wall', 'Asked')"), say("Kept.")])
    session_id = alice.new_session(host.host_id, spec)
    alice.call("PUT", f"/api/sessions/{session_id}/policy", json={"policy": "ask"})
    run = BackgroundRun(alice, session_id, "add a wall")  # another device; this browser never saw it
    call_id = run.wait_for("ToolCall")["metadata"]["tool_call_id"]
    wait_until(lambda: alice.call("GET", "/api/runs").json()["runs"][0]["awaiting_decision"], timeout=15)

    browser.sign_in(server.url, alice.token)
    browser.ready()
    page = browser.page
    page.wait_for_selector("#sessions-toggle[data-waiting='1']", timeout=15_000)
    assert "waiting for your decision" in page.get_attribute("#sessions-toggle", "title")
    page.click("#sessions-toggle")
    item = page.wait_for_selector(f"#sessions [data-session-id='{session_id}']")  # not the approvals list's
    assert "waiting for your decision" in item.inner_text()

    assert alice.call("POST", f"/api/sessions/{session_id}/approval",
                      json={"tool_call_id": call_id, "decision": "keep"}).status_code == 202
    run.join(30)
    page.wait_for_selector("#sessions-toggle[data-waiting='0']", timeout=15_000)
