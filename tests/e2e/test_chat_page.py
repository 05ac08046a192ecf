"""The chat page in a real browser: streaming, the run's result, cancel, reload mid-run, and untrusted output."""
from __future__ import annotations

import time

from tests.support.client import write_script
from tests.support.test_host import TestHost

ADD_DOORS = '''# Add two doors on Level 2 and report the total
for n in range(2):
    doc.add("Door", "D" + str(10 + n), "Level 2")
doors = doc.by_class("Door")
print("doors now:", len(doors))
for i in doors:
    print(i, doc.elements[i]["name"], doc.elements[i]["level"])
'''


def _session_id(page) -> str:
    return page.evaluate("() => (location.hash.match(/session=([0-9a-f]+)/) || [])[1] || null")


def _send(page, text: str) -> None:
    page.fill("#prompt", text)
    page.click("#send")


def test_full_conversation_streams_the_script_then_shows_change_report_and_image(server, alice, host, scripts_dir,
                                                                                   browser):
    model = write_script(scripts_dir / "doors.json", [
        [{"thinking": "The person wants two more doors on Level 2."},
         {"text": "I'll add **two doors** on Level 2."},
         {"tool_call": {"name": "execute_task_automation", "input": {"code": ADD_DOORS}}}],
        [{"text": "Done: two doors were added on Level 2, so there are now **8 doors**."}],
    ])
    page = browser.page
    browser.sign_in(server.url, alice.token)
    browser.ready()
    page.wait_for_function(f"() => [...document.querySelectorAll('#host option')].some(o => o.value === {host.host_id!r})")
    page.fill("#model", model)
    _send(page, "Add two doors on Level 2")

    card = page.locator(".tool-card[data-tool='execute_task_automation']")
    card.wait_for()
    page.wait_for_selector(".turn.assistant[data-state='complete']")

    # The script was on screen, growing, before the complete call (ToolCall) arrived.
    samples = page.evaluate("() => window.__scriptSamples")
    writing = [s["length"] for s in samples if s["state"] == "writing"]
    assert writing, "the script was never shown while it was being written"
    assert min(writing) < len(ADD_DOORS) and len(set(writing)) >= 2, writing
    assert writing == sorted(writing)
    assert page.locator("code[data-role='script']").text_content() == ADD_DOORS
    assert page.locator("code[data-role='script'] span").count() > 0  # highlighted

    # The result: committed, the change report names the new doors, the view image loads, full output.
    assert card.get_attribute("data-state") == "committed"
    report = card.locator(".change-report").text_content()
    assert "2 element(s) changed" in report and "Door | D10 | Level 2" in report
    image = card.locator(".view-image img")
    image.wait_for()
    page.wait_for_function("() => { const i = document.querySelector('.view-image img'); return i && i.complete && i.naturalWidth > 0; }")
    assert "doors now: 8" in card.locator(".output").text_content()
    assert page.locator(".thinking").count() == 1
    assert page.locator(".message strong").first.text_content() == "two doors"
    assert "8 doors" in page.locator(".message").last.text_content()
    assert "tokens in" in page.locator(".run-footer .usage").text_content()
    assert len(host.document.by_class("Door")) == 8

    image.click()
    page.locator(".lightbox img").wait_for()
    browser.screenshot("chat-page-lightbox.png")
    page.keyboard.press("Escape")
    page.locator(".view-image").scroll_into_view_if_needed()
    browser.screenshot("chat-page.png")

    # Reload: the conversation comes back from the transcript and the stored full results.
    session_id = _session_id(page)
    assert session_id
    page.reload()
    browser.ready()
    page.wait_for_selector(".tool-card[data-state='committed'] .view-image img")
    assert page.locator(".turn.user .bubble").text_content() == "Add two doors on Level 2"
    assert "Door | D10 | Level 2" in page.locator(".change-report").text_content()
    assert page.locator("code[data-role='script']").text_content() == ADD_DOORS
