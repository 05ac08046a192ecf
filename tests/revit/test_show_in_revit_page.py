"""Issue 28, item 3, in Chromium: "Show in Revit" appears beside the changed elements of a result and of a held
change's review only when the conversation's host is Revit (the fake Revit behind the real server), and a click
selects the element in that Revit; another host's cards show no such button."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e import conftest as e2e
from tests.e2e.conftest import open_chat
from tests.revit.fake_revit import db as DB
from tests.revit.harness import start_revit_host
from tests.support.client import write_script
from tests.support.server import RunningServer, running_server
from tests.support.spine import automate, say, wait_until

browser_factory = e2e.browser_factory  # the e2e fixtures (Debian's Chromium through Playwright)
playwright_driver = e2e.playwright_driver


@pytest.fixture
def server(tmp_path, scripts_dir) -> Iterator[RunningServer]:
    with running_server(tmp_path, keepalive_s=0.2, tool_timeout_s=30.0) as srv:
        yield srv

RENAME_DOORS = ("for door in DB.FilteredElementCollector(doc).OfClass(DB.FamilyInstance):\n"
                "    if door.LookupParameter('Mark').AsString().startswith('L1-'):\n"
                "        door.LookupParameter('Mark').Set('Renamed ' + door.LookupParameter('Mark').AsString())\n"
                "print('renamed')\n")


def level_1_doors(revit) -> list[int]:
    return sorted(e.Id.Value for e in revit.session.doc._elements.values()
                  if isinstance(e, DB.FamilyInstance) and e._params["Mark"]._value.startswith(("L1-", "Renamed L1-")))


def test_show_in_revit_appears_for_a_revit_session_and_selects_the_element(server, alice, scripts_dir,
                                                                          browser_factory):  # noqa: F811
    revit = start_revit_host(server.url, alice.token, review_window_after_s=0.2)
    try:
        spec = write_script(scripts_dir / "rename.json", [automate(RENAME_DOORS), say("Renamed.")])
        browser = open_chat(browser_factory, server.url, alice, revit.host_id, 1280, 860)
        page = browser.page
        page.select_option("#policy", "ask")
        browser.ask("rename the doors on level 1", model=spec)
        approval = page.locator(".approval")
        approval.wait_for(timeout=60_000)
        doors = level_1_doors(revit)
        assert len(doors) == 2
        # The held change's review: one button per changed door, and one for all of them.
        buttons = approval.locator(".show-in-revit")
        buttons.first.wait_for(state="visible")
        door_button = approval.locator(f".show-in-revit[data-element-ids='{doors[1]}']")
        assert door_button.is_visible()
        door_button.click()
        status = door_button.locator("xpath=following-sibling::span[contains(@class,'show-status')]")
        wait_until(lambda: "Selected it in Revit" in (status.text_content() or ""), timeout=30)
        assert [i.Value for i in revit.session.uidoc.Selection.GetElementIds()] == [doors[1]]
        assert revit.session.uidoc._shown[-1][1] == [doors[1]]
        assert revit.runtime.services.holds.waiting()  # looking at it decided nothing

        approval.locator("button", has_text="Keep").click()
        page.wait_for_selector(".turn.assistant[data-state='complete']", timeout=60_000)
        card = page.locator(".tool-card[data-state='committed']")
        assert revit.session.active_view._isolated is None  # the isolation ended with the Keep
        everything = card.locator(".show-in-revit-row .show-in-revit").first
        assert everything.is_visible() and set(map(int, everything.get_attribute("data-element-ids").split())) >= set(doors)
        everything.click()
        wait_until(lambda: "in Revit" in (card.locator(".show-in-revit-row .show-status").first.text_content() or ""),
                   timeout=30)
        assert set(doors) <= {i.Value for i in revit.session.uidoc.Selection.GetElementIds()}
        assert not browser.errors
    finally:
        revit.stop()


def test_no_show_in_revit_button_for_another_host(server, alice, host, scripts_dir, browser_factory):  # noqa: F811
    spec = write_script(scripts_dir / "add.json", [automate('doc.add("Door", "D90", "Level 1")\nprint("added")\n'),
                                                  say("Added.")])
    browser = open_chat(browser_factory, server.url, alice, host.host_id, 1280, 860)
    browser.send("add a door", model=spec)
    page = browser.page
    card = page.locator(".tool-card[data-state='committed']")
    card.wait_for()
    assert card.locator(".changes").is_visible()
    buttons = card.locator(".show-in-revit")
    assert buttons.count() >= 1  # built on every card, shown only for Revit
    assert not any(buttons.nth(i).is_visible() for i in range(buttons.count()))
