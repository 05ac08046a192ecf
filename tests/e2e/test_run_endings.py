"""Issue 22 items 7 and 9 in a real browser: the approval stays in view (scroll, title, notification), the
400 px layout, a reload restores every marker, the usage line and the wait timer, the person's words on a
refusal or spent budget, and the admin transcript's real outcomes."""
from __future__ import annotations

import re

from tests.conftest import FAST
from tests.e2e.conftest import open_chat
from tests.support.client import Client, write_script
from tests.support.server import running_server
from tests.support.test_host import TestHost

# A tall script: the model streams it in a few large pieces, each far taller than "near the bottom".
TALL_SCRIPT = "".join(f"# step {n}: check the door schedule line by line before renumbering\n" for n in range(160)) \
    + 'doc.add("Door", "HELD-1", "Level 1")\nprint("added")\n'
LONG_PLAN = "".join(f"{n}. Check door {n} on Level 1 against the schedule.\n" for n in range(1, 60))
INSTRUCTIONS = ("Do not call", "execute_task_automation again", "summarise honestly", "Tell the person",
                "describe to the person")
RECORD_NOTIFICATIONS = """
window.__notes = [];
window.Notification = class {
  constructor(title, options) { window.__notes.push({title, body: (options || {}).body}); }
  static get permission() { return "granted"; }
  static requestPermission() { return Promise.resolve("granted"); }
  close() {}
};
"""


def _in_viewport(page, selector: str) -> bool:
    return page.evaluate("""(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
        const c = document.querySelector('#conversation').getBoundingClientRect();
        return r.height > 0 && r.top >= c.top && r.bottom <= c.bottom; }""", selector)


def test_the_approval_scrolls_into_view_with_its_keep_button_and_shows_in_the_title(server, alice, host, scripts_dir,
                                                                                     browser_factory):
    model = write_script(scripts_dir / "tall.json", [
        [{"text": LONG_PLAN},
         {"tool_call": {"name": "execute_task_automation", "input": {"code": TALL_SCRIPT}}}],
        [{"text": "Held door kept."}],
    ])
    browser = browser_factory(width=1280, height=900)
    page = browser.page
    page.add_init_script(RECORD_NOTIFICATIONS)
    browser.enter_chat(server.url, alice.token, query=f"&host={host.host_id}")
    page.fill("#model", model)
    page.select_option("#policy", "ask")
    browser.ask("Add a held door")

    keep = ".approval button.primary"
    page.wait_for_selector(keep)
    page.wait_for_function("() => { const i = document.querySelector('.approval img'); return i && i.complete; }")
    height = page.evaluate("() => document.querySelector('#conversation').scrollHeight")
    assert height > 2 * 900, height  # the tall case the issue saw (2,890 px at 1280x900)
    assert _in_viewport(page, keep), page.evaluate("() => document.querySelector('#conversation').scrollTop")
    page.wait_for_function("() => document.title.startsWith('(1) Approval needed')")
    assert page.title() == "(1) Approval needed — NexusAI"
    notes = page.evaluate("() => window.__notes")
    assert len(notes) == 1 and notes[0]["title"] == "Approval needed — NexusAI" and "test host" in notes[0]["body"]

    page.click(keep)
    page.wait_for_selector(".turn.assistant[data-state='complete']")
    assert page.title() == "NexusAI"
    assert _in_viewport(page, ".run-footer .usage")  # the run was followed to its end


def test_a_person_who_scrolled_up_is_not_pulled_down_until_an_approval_needs_them(server, alice, host, scripts_dir,
                                                                                 browser_factory):
    model = write_script(scripts_dir / "scrolled.json", [
        [{"text": LONG_PLAN}, {"tool_call": {"name": "execute_data_collection",
                                                     "input": {"code": TALL_SCRIPT.replace("doc.add", "# doc.add")}}}],
        [{"text": "Now the change."}, {"tool_call": {"name": "execute_task_automation",
                                                      "input": {"code": 'doc.add("Door", "UP-1", "Level 1")'}}}],
        [{"text": "Done."}],
    ])
    slow = TestHost(server.ws_url, alice.token, delay_s=4).start()
    try:
        browser = browser_factory(width=1280, height=900)
        page = browser.page
        browser.enter_chat(server.url, alice.token, query=f"&host={slow.host_id}")
        page.fill("#model", model)
        page.select_option("#policy", "ask")
        browser.ask("Look, then change")
        page.wait_for_selector(".tool-card[data-tool='execute_data_collection'][data-state='running']")
        assert page.evaluate("() => { const c = document.querySelector('#conversation');"
                             " return c.scrollHeight - c.clientHeight; }") > 600
        page.evaluate("() => { const c = document.querySelector('#conversation'); c.scrollTop = 0; "
                      "c.dispatchEvent(new Event('scroll')); }")
        page.wait_for_selector(".tool-card[data-tool='execute_data_collection'][data-state='done']", timeout=30_000)
        # Left where they were (give or take the browser's scroll anchoring), not pulled to the end.
        below = page.evaluate("() => { const c = document.querySelector('#conversation');"
                              " return c.scrollHeight - c.clientHeight - c.scrollTop; }")
        assert below > 400, below
        page.wait_for_selector(".approval button.primary", timeout=30_000)
        assert _in_viewport(page, ".approval button.primary")  # the decision brings them down
        page.click(".approval button.primary")
        page.wait_for_selector(".turn.assistant[data-state='complete']", timeout=30_000)
    finally:
        slow.stop()


def test_the_narrow_layout_fits_a_400_px_pane_and_the_admin_console_too(server, alice, host, scripts_dir,
                                                                        browser_factory):
    model = write_script(scripts_dir / "narrow-layout.json", [
        [{"tool_call": {"name": "execute_data_collection", "input": {"code": "print('x')"}}}], [{"text": "Ok."}]])
    browser = open_chat(browser_factory, server.url, alice, host.host_id, 400, 800)
    page = browser.page
    page.fill("#model", model)  # a scripted model: its note shows in the header too
    page.wait_for_selector("#scripted-note:not([hidden])")
    browser.send("Inspect")
    layout = page.evaluate("""() => {
      const box = (s) => document.querySelector(s).getBoundingClientRect();
      const prompt = document.querySelector('#prompt');
      const style = getComputedStyle(prompt);
      const ctx = document.createElement('canvas').getContext('2d');
      ctx.font = `${style.fontSize} ${style.fontFamily}`;
      const signout = document.querySelector('.signout button');
      return {header: box('.topbar').height, overflow: document.documentElement.scrollWidth - innerWidth,
              signoutHeight: signout.getBoundingClientRect().height, signoutTop: box('.signout button').top,
              newChatTop: box('#new-session').top, lineHeight: parseFloat(getComputedStyle(signout).lineHeight) || 20,
              placeholder: ctx.measureText(prompt.placeholder).width,
              room: prompt.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight)};
    }""")
    assert layout["header"] < 120, layout
    assert layout["overflow"] <= 0, layout
    assert layout["signoutTop"] == layout["newChatTop"] and layout["signoutHeight"] < 2 * layout["lineHeight"], layout
    assert layout["placeholder"] <= layout["room"], layout
    browser.screenshot("chat-page-400.png")

    admin = browser_factory(width=400, height=800)
    admin.sign_in(server.url, server.token("root", admin=True), path="/admin#tab=usage")
    admin.page.wait_for_selector("#usage-users tbody tr")
    wide = admin.page.evaluate("""() => ({page: document.documentElement.scrollWidth - innerWidth,
        panels: [...document.querySelectorAll('.panel')].filter(p => p.getBoundingClientRect().right > innerWidth)
                 .map(p => p.id || p.className)})""")
    assert wide == {"page": 0, "panels": []}, wide


def test_a_reload_after_a_cancel_keeps_the_marker_and_the_usage_line(server, alice, scripts_dir, browser):
    slow = TestHost(server.ws_url, alice.token, silent=True).start()
    try:
        model = write_script(scripts_dir / "cancel-reload.json", [
            [{"text": "Counting."}, {"tool_call": {"name": "execute_data_collection", "input": {"code": "print(1)"}}}],
            [{"text": "Never reached."}],
        ])
        page = browser.page
        browser.enter_chat(server.url, alice.token, query=f"&host={slow.host_id}")
        browser.ask("Count slowly", model=model)
        page.wait_for_selector(".tool-card[data-state='running']")
        page.click("#cancel")
        page.wait_for_selector(".turn.assistant[data-state='cancelled']")
        live = {"marker": page.locator(".marker.cancelled").text_content(),
                "usage": page.locator(".run-footer .usage").text_content()}
        assert live["marker"] == "Run cancelled." and "tokens in" in live["usage"]

        page.reload()
        browser.ready()
        page.wait_for_selector(".turn.user")
        page.wait_for_selector(".marker.cancelled")
        assert {"marker": page.locator(".marker.cancelled").text_content(),
                "usage": page.locator(".run-footer .usage").text_content()} == live
        assert page.locator(".turn.assistant").get_attribute("data-state") == "cancelled"
    finally:
        slow.stop()


def test_the_wait_timer_counts_from_the_calls_start_after_a_reload(server, alice, scripts_dir, browser):
    slow = TestHost(server.ws_url, alice.token, delay_s=25).start()
    try:
        model = write_script(scripts_dir / "timer.json", [
            [{"tool_call": {"name": "execute_data_collection", "input": {"code": "print(1)"}}}], [{"text": "Ok."}]])
        page = browser.page
        browser.enter_chat(server.url, alice.token, query=f"&host={slow.host_id}")
        browser.ask("Wait for it", model=model)
        page.wait_for_function("() => / · ([4-9]|\\d\\d) s$/.test((document.querySelector('.wait-text') || {}).textContent || '')",
                               timeout=20_000)
        page.reload()
        browser.ready()
        page.wait_for_selector(".tool-card[data-state='running'] .wait-text")
        seconds = int(re.search(r"(\d+) s$", page.locator(".wait-text").text_content()).group(1))
        assert seconds >= 4  # not back at 0 s: it counts from the call's start
    finally:
        slow.stop()


def test_a_refusal_and_a_spent_budget_show_the_persons_words_and_pill(tmp_path, scripts_dir, browser):
    with running_server(tmp_path / "srv", **{**FAST, "max_fixes": 1}) as srv:
        client = Client(srv.url, srv.token("alice"))
        test_host = TestHost(srv.ws_url, client.token).start()
        try:
            failing = 'doc.add("Door", "F")\nraise ValueError("not yet")\n'
            model = write_script(scripts_dir / "cap-page.json", [
                [{"tool_call": {"name": "execute_task_automation", "input": {"code": failing}}}],
                [{"tool_call": {"name": "execute_task_automation", "input": {"code": failing + "# 1\n"}}}],
                [{"tool_call": {"name": "execute_task_automation", "input": {"code": failing + "# 2\n"}}}],
                [{"text": "I stopped."}],
            ])
            page = browser.page
            browser.enter_chat(srv.url, client.token, query=f"&host={test_host.host_id}")
            browser.send("Add a door", model=model)
            capped = page.locator(".tool-card").nth(2)
            assert capped.get_attribute("data-state") == "not-run"
            assert capped.locator(".tool-head .pill").text_content() == "not run"
            shown = capped.locator(".person-text").text_content()
            marker = page.locator(".note.budget").text_content()
            for words in INSTRUCTIONS:
                assert words not in shown and words not in marker, words
            assert shown.startswith("Not run:") and marker.startswith("Fix budget used up: 1 of 1")
            assert not capped.locator(".model-copy").get_attribute("open")  # the model's copy stays folded

            page.reload()  # the same words, marker and pill come back
            browser.ready()
            page.wait_for_selector(".tool-card[data-state='not-run'] .person-text")
            assert page.locator(".person-text").text_content() == shown
            assert page.locator(".note.budget").text_content() == marker

            page.click("#new-session")
            page.select_option("#policy", "readonly")
            browser.send("Add a door", model=model)
            refused = page.locator(".tool-card").first
            assert refused.get_attribute("data-state") == "not-run"
            text = refused.locator(".person-text").text_content()
            assert "read-only" in text and not any(words in text for words in INSTRUCTIONS)
        finally:
            test_host.stop()


def test_the_admin_transcript_shows_each_automations_real_outcome(server, alice, host, scripts_dir, browser_factory):
    model = write_script(scripts_dir / "outcomes.json", [
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": 'doc.add("Door", "KEEP-1")'}}}],
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": 'doc.add("Door", "DROP-1")'}}}],
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": 'doc.elements[999]'}}}],
        [{"text": "Three outcomes."}],
    ])
    chat = open_chat(browser_factory, server.url, alice, host.host_id, 1280, 900)
    page = chat.page
    page.fill("#model", model)
    page.select_option("#policy", "ask")
    chat.ask("Three tries")
    page.locator(".tool-card").nth(0).locator(".approval button.primary").click()
    page.locator(".tool-card").nth(1).locator(".approval button.danger").click()
    page.wait_for_selector(".turn.assistant[data-state='complete']")
    session_id = page.evaluate("() => (location.hash.match(/session=([0-9a-f]+)/) || [])[1]")

    admin = browser_factory(width=1280, height=900)
    admin.sign_in(server.url, server.token("root", admin=True), path="/admin#tab=sessions")
    admin.page.click(f"#sessions-table tr[data-key='{session_id}']")
    cards = admin.page.locator("#session-detail .tool-card")
    cards.nth(2).wait_for()
    pills = [cards.nth(i).locator(".tool-head .pill").text_content() for i in range(3)]
    assert pills == ["kept", "discarded", "rolled back"]
