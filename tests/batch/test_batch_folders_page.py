"""The admin console's Folders tab in a real browser (Chromium through Playwright): an admin shares a project
folder with a team, changes the grant to read-write and withdraws it; each step is what the store holds and
what the user's batch may then do."""
from __future__ import annotations

import tests.e2e.conftest as e2e
from cloud.batch.worker import wait_for_hosts
from ifc_host.sample import write_sample_model
from tests.batch.support import SCRIPT
from tests.batch.test_batch_api import wait_finished
from tests.support.client import Client

# The real-browser fixtures of tests/e2e (Chromium through Playwright, the test server).
playwright_driver, browser_factory, browser, server, _quiet_env = (
    e2e.playwright_driver, e2e.browser_factory, e2e.browser, e2e.server, e2e._quiet_env)


def _access(store, folder: str) -> dict[str, str]:
    return {g["team"]: g["access"] for g in store.folder_grants() if g["folder"] == folder}


def _out_allowed(client: Client, out: str) -> str:
    """A read-only batch of the folder's model into `out`: "202 " when started (run to its end), else the refusal."""
    response = client.call("POST", "/api/batches", json={"files": "projects/tower/t1.ifc", "out": out,
                                                         "script": SCRIPT, "policy": "readonly"})
    if response.status_code == 202:
        wait_finished(client, response.json()["batch_id"])
        wait_for_hosts()
    return f"{response.status_code} {response.json().get('error', '')}"


def test_an_admin_shares_a_project_folder_changes_and_withdraws_the_grant(server, browser, tmp_path, monkeypatch):
    root = tmp_path / "root"
    write_sample_model(root / "projects" / "tower" / "t1.ifc", storeys=1, seed=1)
    monkeypatch.setenv("NEXUS_BATCH_ROOT", str(root))
    monkeypatch.delenv("NEXUS_REDIS_URL", raising=False)
    store = server.state.store
    admin = server.token("root", admin=True)
    assert Client(server.url, admin).call("PUT", "/api/admin/teams/site/members/alice", json={}).status_code == 200
    alice = Client(server.url, server.token("alice"))
    assert "no project folder 'tower' shared with you" in _out_allowed(alice, "o")

    page = browser.page
    browser.sign_in(server.url, admin, path="/admin#tab=folders")
    page.wait_for_selector("body[data-ready='1']")
    page.wait_for_selector("#folders-table tr[data-folder='tower']")
    assert "shared with no team" in page.locator("#folders-table tr[data-folder='tower']").text_content()

    page.fill("#folder-form input[name='folder-name']", "tower")
    page.fill("#folder-form input[name='folder-team']", "site")
    page.click("#folder-form button[type=submit]")
    page.wait_for_selector("#folders-table tr[data-folder='tower'] li[data-team='site']")
    assert _access(store, "tower") == {"site": "read"}
    assert _out_allowed(alice, "mine").startswith("202")  # read: inputs from the folder, out in her own
    assert "read-only" in _out_allowed(alice, "projects/tower/out")

    page.select_option("select[aria-label='Access of team site to projects/tower']", "read-write")
    page.wait_for_function("() => document.querySelector(\"select[aria-label='Access of team site to "
                           "projects/tower']\").value === 'read-write'")
    page.wait_for_function("() => !document.querySelector('.folders-status').textContent")
    assert _access(store, "tower") == {"site": "read-write"}
    assert _out_allowed(alice, "projects/tower/out").startswith("202")

    page.fill("#folder-form input[name='folder-name']", "bad name")
    page.fill("#folder-form input[name='folder-team']", "site")
    page.click("#folder-form button[type=submit]")
    page.wait_for_selector(".folders-status.warn")
    assert "project folder's name" in page.locator(".folders-status").text_content()

    page.locator("#folders-table li[data-team='site'] button", has_text="Withdraw").click()
    page.wait_for_function("() => document.querySelector(\"#folders-table tr[data-folder='tower']\")"
                           ".textContent.includes('shared with no team')")
    assert _access(store, "tower") == {}
    assert "no project folder 'tower' shared with you" in _out_allowed(alice, "o")
    assert browser.errors == [] and browser.dialogs == []
