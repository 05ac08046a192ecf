"""The chat page's Findings & BCF panel in a real browser over a real IFC host: a door the script left without an
opening is listed as a finding with its element (a click shows the plan captured after that automation); a BCF archive of buildingSMART's cases uploads (its open topic
counted for the next message); the download link serves the session as BCF."""
from __future__ import annotations

import zipfile
from io import BytesIO

from tests.coordination.suite import suite
from tests.coordination.test_rules import UNHOSTED_DOOR
from tests.e2e.conftest import open_chat
from tests.support.client import write_script
from tests.support.real_ifc import sample_host


def test_the_panel_lists_findings_uploads_bcf_and_downloads_it(server, alice, scripts_dir, tmp_path,
                                                                browser_factory):
    case = suite() / "Test Cases" / "v2.1" / "Visualization" / "Single visible wall" / "case.bcf"
    with sample_host(tmp_path / "building.ifc", server.url, alice.token, storeys=1) as (_, host_id):
        spec = write_script(scripts_dir / "door.json", [
            [{"text": "Adding the door."},
             {"tool_call": {"name": "execute_task_automation", "input": {"code": UNHOSTED_DOOR}}}],
            [{"text": "Done."}]])
        browser = open_chat(browser_factory, server.url, alice, host_id, 1200, 1200)
        browser.send("Add a door on Level 1", model=spec)
        page = browser.page
        page.click("#coordination > summary")
        item = page.locator(".finding-item").first
        item.wait_for(timeout=30_000)
        assert item.get_attribute("data-severity") == "warning"  # validation warns: the door is kept
        assert "filling without an opening" in item.text_content()
        element = item.locator(".finding-element").first
        assert element.text_content().startswith("IfcDoor 'loose door' · ")
        element.click()
        # the plan captured after the automation that introduced it
        page.wait_for_function("() => { const i = document.querySelector('.finding-preview img');"
                               " return i && i.complete && i.naturalWidth > 0; }", timeout=30_000)

        page.set_input_files(".bcf-file", str(case))
        status = page.locator(".coordination-status")
        page.wait_for_function("() => document.querySelector('.coordination-status').textContent.includes('open topic')",
                               timeout=60_000)
        # its wall is not in this building: the topic is resolved by what its camera looks at
        assert "1 open topic(s) from case.bcf (BCF 2.1), 1 resolved to elements" in status.text_content()

        href = page.locator(".bcf-download").get_attribute("href")
        assert href.endswith("/bcf?version=2.1")
        archive = page.evaluate("async (url) => { const r = await fetch(url); const b = new Uint8Array(await r.arrayBuffer());"
                                " return Array.from(b); }", href)
        names = zipfile.ZipFile(BytesIO(bytes(archive))).namelist()
        assert "bcf.version" in names and any(n.endswith("markup.bcf") for n in names)
        browser.screenshot("coordination-panel.png")
        assert not browser.errors, browser.errors
