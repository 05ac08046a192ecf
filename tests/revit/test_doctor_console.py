"""The admin console's NexusAI Doctor table in a real browser (Debian's Chromium via Playwright): an admin
runs the Doctor on a connected Revit (the real runtime in the fake Revit) and sees its pass/fail rows."""
from __future__ import annotations

import pytest
from playwright import sync_api

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, BrowserPage
from tests.revit.harness import start_revit_host


@pytest.fixture
def page(tmp_path):
    if not CHROMIUM.exists():
        pytest.fail(f"browser tests need Debian's Chromium at {CHROMIUM}: run scripts/test", pytrace=False)
    with sync_api.sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 900})
        try:
            yield BrowserPage(context.pages[0] if context.pages else context.new_page())
        finally:
            context.close()


def test_an_admin_runs_the_doctor_from_the_console_and_sees_every_check(server, page):
    host = start_revit_host(server.url, server.token("alice"), embedded_browser="off")
    try:
        page.sign_in(server.url, server.token("root", admin=True), path="/admin#tab=hosts")
        page.page.wait_for_selector(f"#hosts-table td >> text={host.host_id}")
        assert "No Doctor report yet." in page.page.locator("#doctor-table").text_content()
        row = page.page.locator("#hosts-table tbody tr", has_text=host.host_id)
        row.locator("button", has_text="Run").click()
        page.page.wait_for_selector("#doctor-table tbody tr >> nth=7")
        rows = page.page.locator("#doctor-table tbody tr")
        texts = [rows.nth(i).text_content() for i in range(rows.count())]
        assert len(texts) == 8 and all(host.host_id in t for t in texts)
        webview = next(t for t in texts if "WebView2 can show the chat" in t)
        assert "fail" in webview and "Open chat in browser" in webview  # a failed check names its fallback
        assert all("pass" in t for t in texts if t is not webview)
        assert "7/8 passed" in row.text_content()
    finally:
        host.stop()
