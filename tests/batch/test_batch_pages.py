"""In a real browser (Chromium through Playwright): "Apply to other models…" under a committed automation
starts a batch with the audited script and shows its progress and a link; the batch page keeps or discards
each staged file under `ask`; the admin console's Batches tab lists batches with per-file outcome, changes,
and audit entries."""
from __future__ import annotations

import hashlib

import pytest

import tests.e2e.conftest as e2e
from cloud.batch.worker import wait_for_hosts
from tests.batch.support import SCRIPT, assert_exactly_the_change, make_models
from tests.batch.test_batch_api import by_file, start, wait_finished
from tests.support.client import write_script
from tests.support.real_ifc import sample_host

BROWSER_WAIT_MS = 600_000

# The real-browser fixtures of tests/e2e (Chromium through Playwright, the test server).
playwright_driver, browser_factory, server, _quiet_env = (e2e.playwright_driver, e2e.browser_factory, e2e.server,
                                                          e2e._quiet_env)


@pytest.fixture
def batch_root(tmp_path, monkeypatch):
    root = tmp_path / "root" / "alice"  # alice's own folder under the batch root (cloud/folders/access.py)
    make_models(root / "models", generated=2, corpus=False)
    monkeypatch.setenv("NEXUS_BATCH_ROOT", str(root.parent))
    monkeypatch.delenv("NEXUS_BATCH_STATE", raising=False)
    monkeypatch.delenv("NEXUS_REDIS_URL", raising=False)
    yield root
    wait_for_hosts()  # the files' hosts, stopped in the background once each file was done


def test_apply_a_kept_automation_to_other_models_from_the_chat_page(server, alice, scripts_dir, tmp_path,
                                                                     batch_root, browser_factory):
    with sample_host(tmp_path / "building.ifc", server.url, alice.token, storeys=1) as (_, host_id):
        spec = write_script(scripts_dir / "walls.json", [
            [{"text": "Marking."}, {"tool_call": {"name": "execute_task_automation", "input": {"code": SCRIPT}}}],
            [{"text": "Done."}]])
        browser = e2e.open_chat(browser_factory, server.url, alice, host_id, 1200, 1400, warm_timeout_s=300)
        browser.send("Mark the walls reviewed", model=spec)
        page = browser.page
        card = page.locator(".tool-card").first
        assert card.get_attribute("data-state") == "committed"
        card.locator(".apply-batch-open").click()
        card.locator("input[name=batch-files]").fill("models/gen_0*.ifc")
        card.locator("input[name=batch-out]").fill("from-chat")
        card.locator(".apply-batch-form button.primary").click()
        page.wait_for_selector(".apply-batch-status[data-finished='1']", timeout=BROWSER_WAIT_MS)
        status = card.locator(".apply-batch-status")
        batch_id = status.get_attribute("data-batch-id")
        assert "done 2, failed 0" in status.text_content()
        assert card.locator("a.batch-link").get_attribute("href") == f"/batches/{batch_id}"
        assert browser.errors == []
    detail = alice.call("GET", f"/api/batches/{batch_id}").json()
    assert detail["script_sha256"] == hashlib.sha256(SCRIPT.encode()).hexdigest()
    assert detail["source"]["tool_call_id"] and detail["owner"] == "alice"
    for name in ("gen_00.ifc", "gen_01.ifc"):
        assert_exactly_the_change(batch_root / "models" / name, batch_root / "from-chat" / name)


def test_review_on_the_batch_page_and_the_admin_batches_tab(server, alice, batch_root, browser_factory):
    started = start(alice, files="models/*.ifc", script=SCRIPT, script_name="walls.py", out="reviewed", policy="ask")
    batch_id = started["batch_id"]
    wait_finished(alice, batch_id)
    browser = browser_factory(width=1400, height=1000)
    page = browser.page
    browser.sign_in(server.url, alice.token, path=f"/batches/{batch_id}")
    browser.ready()
    page.wait_for_selector("#batch tr[data-file='models/gen_00.ifc'][data-state='staged']", timeout=60_000)
    assert page.locator("#batch tr[data-state='failed']").count() == 2
    page.click("#batch tr[data-file='models/gen_00.ifc'] button[data-decision='keep']")
    page.wait_for_selector("#batch tr[data-file='models/gen_00.ifc'][data-state='kept']", timeout=30_000)
    page.click("#batch tr[data-file='models/gen_01.ifc'] button[data-decision='discard']")
    page.wait_for_selector("#batch tr[data-file='models/gen_01.ifc'][data-state='discarded']", timeout=30_000)
    assert "keep by alice" in page.locator("#batch tr[data-file='models/gen_00.ifc']").text_content()
    assert sorted(p.name for p in (batch_root / "reviewed").glob("*")) == ["gen_00.ifc"]
    assert_exactly_the_change(batch_root / "models" / "gen_00.ifc", batch_root / "reviewed" / "gen_00.ifc")
    files = by_file(alice.call("GET", f"/api/batches/{batch_id}").json())
    assert files["gen_00.ifc"]["review"]["by"] == "alice" and files["gen_01.ifc"]["state"] == "discarded"
    assert browser.errors == []

    admin = server.token("root", admin=True)
    console = browser_factory(width=1400, height=1000)
    console.sign_in(server.url, admin, path="/admin#tab=batches")
    console.page.wait_for_selector(f"#batches-table tr[data-batch='{batch_id}']", timeout=60_000)
    row = console.page.locator(f"#batches-table tr[data-batch='{batch_id}']")
    assert "alice" in row.text_content() and "walls.py" in row.text_content() and "ask" in row.text_content()
    row.click()
    console.page.wait_for_selector("#batch-detail tr[data-file='models/gen_00.ifc'][data-state='kept']", timeout=30_000)
    kept = console.page.locator("#batch-detail tr[data-file='models/gen_00.ifc']").text_content()
    assert "modified" in kept and "model " + hashlib.sha256(SCRIPT.encode()).hexdigest()[:12] in kept
    assert console.page.locator("#batch-detail tr[data-state='failed']").count() == 2
    assert console.page.locator("#batch-detail button[data-decision]").count() == 0  # the admin view reads only
    assert console.errors == []
