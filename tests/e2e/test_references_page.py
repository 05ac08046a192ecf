"""The chat page attaches reference models to a conversation (paths in the person's own folders) and shows them
in the header, on the real server with a real IFC host and Chromium; a path outside the person's folders is
refused with the server's words and attaches nothing."""
from __future__ import annotations

import shutil

from tests.coordination.suite import federated_pair
from tests.support.real_ifc import connected_host


def test_references_are_attached_on_the_chat_page_and_shown_in_its_header(server, alice, browser, tmp_path,
                                                                           monkeypatch):
    architectural, mep = federated_pair()
    work = tmp_path / "Architectural.ifc"
    shutil.copyfile(architectural, work)
    root = tmp_path / "root"
    (root / "alice").mkdir(parents=True)
    (root / "bob").mkdir()
    shutil.copyfile(mep, root / "alice" / "MEP.ifc")
    shutil.copyfile(mep, root / "bob" / "secret.ifc")
    monkeypatch.setenv("NEXUS_BATCH_ROOT", str(root))
    with connected_host(work, server.url, alice.token) as (_, host_id):
        browser.enter_chat(server.url, alice.token or "", query=f"&host={host_id}")
        page = browser.page
        assert not page.locator("#refs-indicator").is_visible()
        page.click("#refs-toggle")
        page.fill("#refs-paths", "../bob/secret.ifc")
        page.click("#refs-attach")
        page.wait_for_selector("#notice:not([hidden])")
        assert "leaves your folder" in page.locator("#notice").text_content()
        assert not page.locator("#refs-indicator").is_visible()
        page.fill("#refs-paths", "MEP.ifc")
        page.click("#refs-attach")
        page.wait_for_selector("#refs-indicator:not([hidden])")
        assert page.locator("#refs-indicator").text_content() == "References: MEP.ifc"
        (session,) = alice.call("GET", "/api/sessions").json()["sessions"]
        assert alice.call("GET", f"/api/sessions/{session['id']}").json()["refs"] == [
            {"name": "MEP.ifc", "path": "MEP.ifc"}]
        browser.screenshot("chat-references.png")
        page.reload()
        browser.ready()
        page.wait_for_selector("#refs-indicator:not([hidden])")
        assert page.locator("#refs-indicator").text_content() == "References: MEP.ifc"
    assert browser.errors == [] and browser.dialogs == []
