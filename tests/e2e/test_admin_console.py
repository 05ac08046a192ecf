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


def _usage_on(db_path, day: str, user: str, model: str, cost: float, output: int) -> None:
    import sqlite3

    with sqlite3.connect(db_path) as db:
        db.execute("INSERT INTO usage (ts, day, session_id, user_name, model, uncached_input, cache_read, cache_write, "
                   "output, reasoning, cost) VALUES (0, ?, 's', ?, ?, 100, 0, 0, ?, 0, ?)", (day, user, model, output, cost))


def test_usage_and_cost_are_charted_over_time_by_user_and_by_model(server, browser):
    for day, user, model, cost in [("2026-11-20", "alice", "anthropic:claude-sonnet-4-5", 1.25),
                                   ("2026-11-22", "bob", "openai:gpt-5.1", 0.5),
                                   ("2026-11-22", "alice", "openai:gpt-5.1", 2.0)]:
        _usage_on(server.db_path, day, user, model, cost, 1000)
    page = browser.page
    browser.sign_in(server.url, server.token("root", admin=True), path="/admin#tab=usage")
    page.wait_for_selector("body[data-ready='1']")
    users, models = page.locator("#chart-users"), page.locator("#chart-models")
    users.locator("svg rect").first.wait_for()
    # One bar segment per (day, user); three days on the axis, the quiet one included.
    assert sorted(users.locator("rect").evaluate_all("rs => rs.map(r => r.dataset.day + ' ' + r.dataset.series)")) == [
        "2026-11-20 alice", "2026-11-22 alice", "2026-11-22 bob"]
    assert users.locator("text.axis", has_text="11-21").count() == 1
    assert "alice · $3.25" in users.locator(".chart-legend").text_content()
    assert "bob · $0.50" in users.locator(".chart-legend").text_content()
    series = set(models.locator("rect").evaluate_all("rs => rs.map(r => r.dataset.series)"))
    assert len(series) == 2 and any("claude-sonnet-4-5" in s for s in series) and any("gpt-5.1" in s for s in series)
    page.select_option("#usage-metric", "tokens")
    page.wait_for_function("() => document.querySelector('#chart-users .chart-legend').textContent.includes('alice · 2,200')")
    page.evaluate("() => document.querySelector('#chart-users').scrollIntoView()")
    browser.screenshot("admin-usage-charts.png")


def test_sessions_and_audit_entries_can_be_searched_and_filtered(server, browser):
    store = server.state.store
    alices = store.create_session("alice", "h_alice", "anthropic:claude-sonnet-4-5", {})
    bobs = store.create_session("bob", "h_bob", "openai:gpt-5.1", {})
    store.update_session(bobs, status="error")
    row = {"session_id": alices, "tool_call_id": "c1", "user_name": "alice", "host_id": "h_alice", "host_app": "ifc",
           "capability_version": "1", "sha256": "ab" * 32}
    store.record_scripts([{**row, "kind": "model", "code": "print('needle in the haystack')"},
                          {**row, "kind": "epilogue", "code": "print('report')", "sha256": "cd" * 32},
                          {**row, "kind": "model", "code": "print('hay')", "user_name": "bob", "session_id": bobs}])
    page = browser.page
    browser.sign_in(server.url, server.token("root", admin=True), path="/admin#tab=sessions")
    page.wait_for_selector("body[data-ready='1']")
    page.wait_for_selector(f"#sessions-table tr[data-key='{bobs}']")
    page.fill("#sessions-q", "gpt-5")
    page.click("#sessions-search button")
    page.wait_for_function("() => document.querySelectorAll('#sessions-table tbody tr').length === 1")
    assert page.locator(f"#sessions-table tr[data-key='{bobs}']").count() == 1
    page.fill("#sessions-q", "")
    page.select_option("#sessions-status", "idle")
    page.click("#sessions-search button")
    page.wait_for_selector(f"#sessions-table tr[data-key='{alices}']")
    page.wait_for_function("() => document.querySelectorAll('#sessions-table tbody tr').length === 1")
    assert "1 match" in page.locator("#sessions-count").text_content()

    page.click("[data-tab=audit]")
    page.wait_for_function("() => document.querySelectorAll('#audit-table tbody tr').length === 3")
    page.fill("#audit-q", "NEEDLE")
    page.click("#audit-search button")
    page.wait_for_function("() => document.querySelectorAll('#audit-table tbody tr').length === 1")
    page.click("#audit-table tbody tr")
    assert "needle in the haystack" in page.locator("#audit-detail code").text_content()
    page.fill("#audit-q", "")
    page.fill("#audit-user", "alice")
    page.select_option("#audit-kind", "epilogue")
    page.click("#audit-search button")
    page.wait_for_function("() => document.querySelector('#audit-table tbody').textContent.includes('cdcdcd')")
    assert page.locator("#audit-table tbody tr").count() == 1


def test_an_admin_sees_another_users_captured_views_and_manages_token_rights(server, browser):
    import io

    from PIL import Image

    store = server.state.store
    session_id = store.create_session("alice", None, "scripted:x", {})
    png = io.BytesIO()
    Image.new("RGB", (40, 30), (52, 81, 209)).save(png, format="PNG")
    store.save_image(session_id, png.getvalue())
    page = browser.page
    browser.sign_in(server.url, server.token("root", admin=True), path="/admin#tab=sessions")
    page.wait_for_selector("body[data-ready='1']")
    page.click(f"#sessions-table tr[data-key='{session_id}']")
    page.wait_for_function("() => { const i = document.querySelector('#session-detail .admin-images img');"
                           " return i && i.complete && i.naturalWidth === 40; }")

    page.click("[data-tab=tokens]")
    page.fill("#token-user", "carol")
    page.check("#token-host")
    page.click("#token-form button[type=submit]")
    host_token = page.locator("#new-token").text_content()
    assert "host-only" in page.locator("#token-created").text_content()
    assert store.user_for_token(host_token).scope == "host"
    page.fill("#token-user", "carol")
    page.check("#token-admin")
    page.click("#token-form button[type=submit]")
    page.wait_for_function("() => document.querySelector('#token-created').textContent.includes('admin token')")
    admin_token = page.locator("#new-token").text_content()
    assert store.user_for_token(admin_token).is_admin and not store.user_for_token(host_token).is_admin
    carol_admin = page.locator("#tokens-table tr", has_text="carol").filter(has_text="admin").first
    carol_admin.locator("button", has_text="Remove admin").click()
    page.wait_for_function("() => ![...document.querySelectorAll('#tokens-table tr')].some("
                           "r => r.textContent.includes('carol') && r.textContent.includes('Remove admin'))")
    assert not store.user_for_token(admin_token).is_admin and store.user_for_token(admin_token) is not None
