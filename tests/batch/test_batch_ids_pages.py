"""In a real browser (Chromium through Playwright): the chat page shows, beside the validation setting, a small
accessible indicator naming the session's IDS (its title, its number of specifications) and nothing when
there is none; "Apply to other models…" carries the session's IDS over to the batch; the batch page names
the IDS its files were checked against."""
from __future__ import annotations

import pytest

import tests.e2e.conftest as e2e
from cloud.batch.worker import wait_for_hosts
from ifc_host import runtime, sample
from tests.batch.ids_support import FIRE_RATING_IDS, IDS_SCRIPT, IDS_TITLE, make_ids_models
from tests.support.client import write_script

# The real-browser fixtures of tests/e2e (Chromium through Playwright, the test server).
playwright_driver, browser_factory, server, _quiet_env = (e2e.playwright_driver, e2e.browser_factory, e2e.server,
                                                          e2e._quiet_env)
BATCH_WAIT_MS = 600_000


@pytest.fixture
def ids_root(tmp_path, monkeypatch):
    root = tmp_path / "root" / "alice"  # alice's own folder under the batch root (cloud/folders/access.py)
    make_ids_models(root / "models")
    monkeypatch.setenv("NEXUS_BATCH_ROOT", str(root.parent))
    monkeypatch.delenv("NEXUS_BATCH_STATE", raising=False)
    monkeypatch.delenv("NEXUS_REDIS_URL", raising=False)
    yield root
    wait_for_hosts()


def test_the_ids_indicator_and_the_ids_carried_to_a_batch(server, alice, scripts_dir, tmp_path, ids_root,
                                                          browser_factory):
    model_path = tmp_path / "building.ifc"
    sample.write_sample_model(model_path, storeys=1)
    host = runtime.start_host_thread(str(model_path), server.url, alice.token)
    try:
        host_id = host.wait_connected(30)
        spec = write_script(scripts_dir / "walls.json", [
            [{"text": "Marking."}, {"tool_call": {"name": "execute_task_automation", "input": {"code": IDS_SCRIPT}}}],
            [{"text": "Done."}]])
        assert alice.call("GET", "/api/models", timeout=300).status_code == 200
        browser = browser_factory(width=1200, height=1400)
        page = browser.page
        browser.sign_in(server.url, alice.token, query=f"&host={host_id}")
        browser.ready()
        page.fill("#model", spec)
        page.fill("#prompt", "Mark the walls reviewed")
        page.click("#send")
        page.wait_for_selector(".turn.assistant[data-state='complete']", timeout=60_000)
        indicator = page.locator("#ids-indicator")
        assert indicator.count() == 1 and indicator.is_hidden()  # no IDS: nothing shown

        (session,) = alice.call("GET", "/api/sessions").json()["sessions"]
        assert alice.call("PUT", f"/api/sessions/{session['id']}/ids", json={"ids": FIRE_RATING_IDS}).status_code == 200
        page.reload()
        browser.ready()
        page.wait_for_selector("#ids-indicator:not([hidden])", timeout=60_000)
        assert indicator.text_content() == f"IDS: {IDS_TITLE}"
        described = f"IDS checked after each automation: {IDS_TITLE} (1 specification)"
        assert indicator.get_attribute("aria-label") == described and indicator.get_attribute("title") == described
        assert indicator.get_attribute("role") == "note" and indicator.get_attribute("tabindex") == "0"
        # beside the validation setting, and nothing else of the document on the page
        assert page.evaluate("document.querySelector('.validation-field').nextElementSibling.id") == "ids-indicator"
        assert "IFCLABEL" not in page.content() and "standards.buildingsmart.org" not in page.content()

        card = page.locator(".tool-card").first
        card.wait_for(state="visible", timeout=60_000)
        card.locator(".apply-batch-open").click()
        carry = card.locator("input[name=batch-ids]")
        assert carry.is_checked() and IDS_TITLE in card.locator(".apply-batch-ids").text_content()
        card.locator("input[name=batch-files]").fill("models/*.ifc")
        card.locator("input[name=batch-out]").fill("from-chat")
        card.locator(".apply-batch-form button.primary").click()
        status = card.locator(".apply-batch-status")
        page.wait_for_selector(".apply-batch-status[data-finished='1']", timeout=BATCH_WAIT_MS)
        assert f"IDS “{IDS_TITLE}” (1 specification," in status.text_content()
        batch_id = status.get_attribute("data-batch-id")
        detail = alice.call("GET", f"/api/batches/{batch_id}").json()
        assert detail["ids"]["title"] == IDS_TITLE
        rows = {r["file"]: r for r in detail["file_results"]}
        assert [f["kind"] for f in rows["models/broken_00.ifc"]["validation"]].count("ids") >= 1
        assert rows["models/plain_00.ifc"]["validation"] == []
        assert browser.errors == []
    finally:
        host.stop()

    batch_page = browser_factory(width=1400, height=1000)
    batch_page.sign_in(server.url, alice.token, path=f"/batches/{batch_id}")
    batch_page.ready()
    note = batch_page.page.locator("#batch .batch-ids")
    note.wait_for(state="visible", timeout=60_000)
    assert note.text_content() == (f"Checked on every file against the IDS “{IDS_TITLE}” (1 specification, "
                                   f"{len(FIRE_RATING_IDS.encode()) / 1024:.1f} KB); validation warn")
    assert "FireRating" in batch_page.page.locator("#batch tr[data-file='models/broken_00.ifc']").text_content()
    assert "IFCLABEL" not in batch_page.page.content() and "standards.buildingsmart.org" not in batch_page.page.content()
    assert batch_page.errors == []

    console = browser_factory(width=1400, height=1000)  # the admin console's Batches tab names it too
    console.sign_in(server.url, server.token("root", admin=True), path="/admin#tab=batches")
    row = console.page.locator(f"#batches-table tr[data-batch='{batch_id}']")
    row.wait_for(state="visible", timeout=60_000)
    assert f"IDS “{IDS_TITLE}” (1 specification," in row.text_content()
    row.click()
    console.page.wait_for_selector("#batch-detail .batch-ids", timeout=30_000)
    assert console.errors == []
