"""The admin console in a real browser: admins only, the audit log with the right hashes, tokens and policy."""
from __future__ import annotations

import hashlib

from tests.support.client import write_script

SCRIPT = 'for name in ("D20", "D21"):\n    doc.add("Door", name, "Level 1")\nprint("added")\n'

FETCH_ADMIN = """async (path) => {
  const r = await fetch(path, {credentials: "same-origin", headers: {"X-Requested-With": "nexus"}});
  return {status: r.status, body: await r.text()};
}"""


def _run_automation(alice, host, scripts_dir) -> str:
    model = write_script(scripts_dir / "admin.json", [
        [{"text": "Adding doors."}, {"tool_call": {"name": "execute_task_automation", "input": {"code": SCRIPT}}}],
        [{"text": "Two doors added."}],
    ])
    session_id = alice.new_session(host.host_id, model)
    stream = alice.run(session_id, "Add two doors on Level 1")
    assert stream.last["type"] == "Complete", stream.last
    return session_id


def test_non_admins_get_403_and_no_admin_data(server, alice, browser):
    page = browser.page
    browser.sign_in(server.url, alice.token)
    response = page.goto(server.url + "/admin")
    assert response.status == 403
    assert "Admins only" in page.content() and "alice" in page.locator("main").text_content()
    assert page.locator("#sessions-table, #audit-table, #tokens-table").count() == 0
    for path in ("/api/admin/sessions", "/api/admin/audit", "/api/admin/tokens", "/api/admin/users", "/api/admin/usage"):
        answer = page.evaluate(FETCH_ADMIN, path)
        assert answer["status"] == 403, (path, answer)
        assert "admin token required" in answer["body"]


def test_signed_out_visitors_get_the_sign_in_page_and_can_sign_in(server, alice, browser):
    page = browser.page
    response = page.goto(server.url + "/admin")
    assert response.status == 401
    page.fill("#token", "not-a-token")
    page.click("button[type=submit]")
    assert "That token is not valid." in page.locator(".problem").text_content()
    page.fill("#token", alice.token)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    assert page.url.rstrip("/").endswith("/admin")  # back where the visitor was going; alice is no admin
    assert "Admins only" in page.content()


def test_admin_console_shows_the_runs_audit_entries_with_the_right_hashes(server, alice, host, scripts_dir, browser):
    session_id = _run_automation(alice, host, scripts_dir)
    stored = server.state.store.audit(session_id=session_id)
    assert {row["kind"] for row in stored} == {"model", "epilogue"}
    model_sha = hashlib.sha256(SCRIPT.encode()).hexdigest()
    epilogue = next(row for row in stored if row["kind"] == "epilogue")
    assert epilogue["sha256"] == hashlib.sha256(epilogue["code"].encode()).hexdigest()

    admin_token = server.token("root", admin=True)
    page = browser.page
    browser.sign_in(server.url, admin_token, path="/admin#tab=audit")
    page.wait_for_selector("body[data-ready='1']")
    rows = page.locator("#audit-table tbody tr")
    rows.first.wait_for()
    shown = {rows.nth(i).locator("td.hash").text_content(): rows.nth(i).locator("td").nth(3).text_content()
             for i in range(rows.count())}
    assert shown == {model_sha: "model", epilogue["sha256"]: "epilogue"}
    assert f"{len(SCRIPT.encode())}" in page.locator(f"#audit-table tr[data-key='{next(r['id'] for r in stored if r['kind'] == 'model')}']").text_content()

    # Search by hash prefix, then open the script: the code shown is exactly what was dispatched.
    page.fill("#audit-sha", model_sha[:10])
    page.click("#audit-search button")
    page.wait_for_function("() => document.querySelectorAll('#audit-table tbody tr').length === 1")
    page.click("#audit-table tbody tr")
    assert page.locator("#audit-detail code").text_content() == SCRIPT
    assert model_sha in page.locator("#audit-detail .hash").text_content()
    page.fill("#audit-sha", "ffffffffffff")
    page.click("#audit-search button")
    page.wait_for_selector("#audit-table td.muted")

    # The session: transcript and its audit entries.
    page.click("[data-tab=sessions]")
    page.click(f"#sessions-table tr[data-key='{session_id}']")
    detail = page.locator("#session-detail")
    detail.locator(".conversation-view .turn.user").first.wait_for()
    assert "Add two doors on Level 1" in detail.locator(".conversation-view").text_content()
    assert detail.locator(".tool-card code[data-role='script']").text_content() == SCRIPT
    assert model_sha in detail.locator("table").first.text_content()
    page.evaluate("() => window.scrollTo(0, 0)")
    browser.screenshot("admin-console.png")

    page.click("[data-tab=hosts]")
    page.wait_for_selector(f"#hosts-table td >> text={host.host_id}")
    assert "test-1.0" in page.locator("#providers-table").text_content()

    page.click("[data-tab=usage]")
    page.wait_for_selector("#usage-users tbody tr")
    assert "alice" in page.locator("#usage-users").text_content()
    assert "admin.json" in page.locator("#usage-models").text_content()


def test_admin_creates_and_revokes_a_token_and_sets_a_policy(server, alice, browser):
    store = server.state.store
    page = browser.page
    browser.sign_in(server.url, server.token("root", admin=True), path="/admin#tab=tokens")
    page.wait_for_selector("body[data-ready='1']")
    page.fill("#token-user", "bob")
    page.click("#token-form button[type=submit]")
    token = page.locator("#new-token").text_content()
    assert store.user_for_token(token).name == "bob"
    assert token not in page.locator("#tokens-table").text_content()  # only ever shown once, above

    page.select_option("select[aria-label='Policy of bob']", "readonly")
    page.wait_for_function("() => document.querySelector(\"#users-table tr[data-key='bob']\").textContent.includes('saved')")
    assert store.get_user("bob").policy == "readonly"

    bob_row = page.locator("#tokens-table tr", has_text="bob")
    bob_row.locator("button").click()
    bob_row.locator("button", has_text="Confirm revoke").click()
    page.wait_for_function("() => [...document.querySelectorAll('#tokens-table tr')].some(r => r.textContent.includes('bob') && r.textContent.includes('revoked'))")
    assert store.user_for_token(token) is None
    assert browser.dialogs == []
