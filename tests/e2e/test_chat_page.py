"""The chat page in a real browser: streaming, the run's result, cancel, reload mid-run, and untrusted output."""
from __future__ import annotations

import json
import time

from tests.conftest import FAST
from tests.e2e.cutting_proxy import CuttingProxy
from tests.support.client import write_script
from tests.support.server import running_server
from tests.support.test_host import TestHost, TestProvider

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


def test_full_conversation_streams_the_script_then_shows_change_report_and_image(server, alice, host, scripts_dir,
                                                                                   browser):
    model = write_script(scripts_dir / "doors.json", [
        [{"thinking": "The person wants two more doors on Level 2."},
         {"text": "I'll add **two doors** on Level 2."},
         {"tool_call": {"name": "execute_task_automation", "input": {"code": ADD_DOORS}}}],
        [{"text": "Done: two doors were added on Level 2, so there are now **8 doors**."}],
    ])
    page = browser.page
    browser.enter_chat(server.url, alice.token)
    page.wait_for_function(f"() => [...document.querySelectorAll('#host option')].some(o => o.value === {host.host_id!r})")
    page.fill("#model", model)
    host.undrawn = 2  # the view image comes with a count of elements the host could not draw
    browser.ask("Add two doors on Level 2")

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
    host.undrawn = None
    assert card.locator(".view-image .undrawn").text_content() == "2 element(s) of this view could not be drawn."
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

    # Switch model between messages: the next run uses (and the session remembers) the new one.
    other = write_script(scripts_dir / "other.json", [[{"text": "A different model answers."}]])
    browser.ask("Who is answering?", model=other)
    page.wait_for_selector(".turn.assistant[data-state='complete'] >> text=A different model answers.")
    assert page.locator(".turn.assistant .model-label").last.text_content() == "scripted:other.json"
    assert alice.call("GET", f"/api/sessions/{session_id}").json()["model"] == other

    # Start afresh, then resume the first conversation from the list.
    page.click("#new-session")
    page.wait_for_selector(".empty")
    assert _session_id(page) is None
    browser.screenshot("chat-page-empty.png")
    page.click("#sessions-toggle")
    item = page.locator(f"#sessions [data-session-id='{session_id}']")
    assert item.locator(".session-title").text_content() == "Add two doors on Level 2"
    item.click()
    page.wait_for_selector(".tool-card[data-state='committed']")
    assert _session_id(page) == session_id


def test_cancel_stops_a_run_waiting_for_a_slow_host(server, alice, scripts_dir, browser):
    slow = TestHost(server.ws_url, alice.token, silent=True).start()
    try:
        model = write_script(scripts_dir / "slow.json", [
            [{"text": "Counting."}, {"tool_call": {"name": "execute_data_collection", "input": {"code": "print(1)"}}}],
            [{"text": "Never reached."}],
        ])
        page = browser.page
        browser.enter_chat(server.url, alice.token)
        browser.ask("Count something slowly", model=model)
        page.wait_for_selector(".tool-card[data-state='running'] .tool-wait .wait-text")
        assert "Waiting for the test host" in page.locator(".wait-text").text_content()
        page.click("#cancel")
        page.wait_for_selector(".turn.assistant[data-state='cancelled']")
        assert page.locator(".marker.cancelled").text_content() == "Run cancelled."
        assert page.locator(".tool-card").get_attribute("data-state") == "cancelled"
        assert page.locator("#send").is_visible() and not page.locator("#cancel").is_visible()
        assert "Never reached." not in page.locator("#conversation").text_content()
    finally:
        slow.stop()


def test_reload_mid_run_shows_the_conversation_and_reattaches_to_the_live_run(server, alice, scripts_dir, browser):
    slow = TestHost(server.ws_url, alice.token, delay_s=11.5).start()
    try:
        model = write_script(scripts_dir / "reload.json", [
            [{"text": "Adding a wall."},
             {"tool_call": {"name": "execute_task_automation", "input": {"code": 'doc.add("Wall", "W9")\nprint("ok")'}}}],
            [{"text": "The wall is in."}],
        ])
        page = browser.page
        browser.enter_chat(server.url, alice.token)
        browser.ask("Add a wall", model=model)
        page.wait_for_selector(".tool-card[data-state='running']")
        session_id = _session_id(page)

        page.reload()
        browser.ready()
        assert _session_id(page) == session_id
        # The person's message comes from the transcript; the run in progress from the replayed stream.
        assert page.locator(".turn.user .bubble").text_content() == "Add a wall"
        page.wait_for_selector(".tool-card[data-state='running']")
        assert page.locator(".tool-card").count() == 1 and page.locator(".message").count() == 1
        assert page.locator("#cancel").is_visible()
        hint = page.locator(".tool-wait .hint")
        hint.wait_for(state="visible", timeout=15_000)
        assert hint.text_content() == TestProvider.busy_hint  # the host's own hint, from its provider
        browser.screenshot("chat-page-waiting.png")
        page.wait_for_selector(".turn.assistant[data-state='complete']", timeout=20_000)
        assert page.locator(".tool-card").get_attribute("data-state") == "committed"
        assert "The wall is in." in page.locator(".message").last.text_content()
    finally:
        slow.stop()


HOSTILE = '<img src=x onerror="window.__pwned=1;alert(1)"><script>window.__pwned=1</script>'


def test_hostile_model_and_host_output_stays_inert_text(server, alice, host, scripts_dir, browser):
    code = (f'doc.add("Door", {HOSTILE!r}, "Level 1")\n'
            f'print({HOSTILE!r})\n'
            f'raise ValueError({HOSTILE!r})\n')
    model = write_script(scripts_dir / "hostile.json", [
        [{"thinking": "Thinking " + HOSTILE},
         {"text": f"Here is **bold** and {HOSTILE} and [a link](javascript:window.__pwned=1) "
                  f"<a href=\"javascript:alert(1)\" onclick=\"window.__pwned=1\">x</a> <iframe src=\"/\"></iframe>"},
         {"tool_call": {"name": "execute_task_automation", "input": {"code": code}}}],
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": code.rsplit("raise", 1)[0]}}}],
        [{"text": "Finished. " + HOSTILE}],
    ])
    page = browser.page
    browser.enter_chat(server.url, alice.token)
    browser.ask(HOSTILE, model=model)
    page.wait_for_selector(".turn.assistant[data-state='complete']")
    page.wait_for_timeout(300)  # give any injected handler a chance to fire

    assert browser.dialogs == []
    assert page.evaluate("() => window.__pwned") is None
    dangerous = page.evaluate("""() => [...document.querySelectorAll(
        '#conversation script, #conversation iframe, #conversation [onerror], #conversation [onclick],'
        + ' #conversation a[href^="javascript"], #conversation img[src="x"]')].map(e => e.outerHTML)""")
    assert dangerous == [], dangerous
    # The untrusted text is shown literally, not dropped: in the bubble, the output, the error and the report.
    assert page.locator(".turn.user .bubble").text_content() == HOSTILE
    failed, committed = page.locator(".tool-card").nth(0), page.locator(".tool-card").nth(1)
    assert HOSTILE in failed.locator(".error-box").text_content()
    assert HOSTILE in committed.locator(".output").text_content()
    assert HOSTILE in committed.locator(".change-report").text_content()
    assert page.locator(".message strong").first.text_content() == "bold"
    assert HOSTILE in page.locator(".message").first.text_content()  # raw HTML in Markdown shows as text
    assert HOSTILE in page.locator(".thinking-text").first.text_content()

    page.reload()  # the same content rendered from the transcript stays inert too
    browser.ready()
    page.wait_for_selector(".tool-card[data-state='committed']")
    page.wait_for_timeout(300)
    assert browser.dialogs == [] and page.evaluate("() => window.__pwned") is None


def test_sixty_thousand_lines_of_output_render_fast_and_scroll_to_the_end(server, alice, host, scripts_dir, browser):
    model = write_script(scripts_dir / "long.json", [
        [{"tool_call": {"name": "execute_data_collection",
                        "input": {"code": 'for i in range(60000):\n    print("row", i, "x" * 40)'}}}],
        [{"text": "That was long."}],
    ])
    page = browser.page
    browser.enter_chat(server.url, alice.token)
    page.fill("#model", model)
    started = time.monotonic()
    browser.ask("Print a lot")
    page.wait_for_selector(".turn.assistant[data-state='complete']", timeout=30_000)
    elapsed = time.monotonic() - started
    viewer = page.locator(".output-lines.virtual")
    assert viewer.get_attribute("data-lines") == "60000"
    assert "60,000 lines" in page.locator(".output .section-head").text_content()
    shown = page.evaluate("() => document.querySelector('.output-window').textContent.split('\\n').length")
    assert shown < 1000  # only the visible window is in the DOM
    viewer.evaluate("el => { el.scrollTop = el.scrollHeight; }")
    page.wait_for_function("() => document.querySelector('.output-window').textContent.includes('row 59999 ')")
    assert elapsed < 15, f"the run took {elapsed:.1f} s to show"


def test_narrow_dockable_pane_has_no_horizontal_overflow(server, alice, host, scripts_dir, browser_factory):
    model = write_script(scripts_dir / "narrow.json", [
        [{"text": "Checking the doors."},
         {"tool_call": {"name": "execute_task_automation",
                        "input": {"code": 'doc.add("Door", "D77", "Level 1")\nprint("a very long line " * 30)'}}}],
        [{"text": "One door added."}],
    ])
    narrow = browser_factory(width=400, height=800)
    page = narrow.page
    narrow.enter_chat(server.url, alice.token, query=f"&host={host.host_id}")
    assert page.locator("#host").input_value() == host.host_id  # ?host= preselects the pane's host
    narrow.ask("Add a door", model=model)
    page.wait_for_selector(".turn.assistant[data-state='complete']")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 400
    narrow.screenshot("chat-page-narrow.png")


def test_reset_turn_discards_the_half_streamed_turn_and_budget_notes_show(tmp_path, scripts_dir, browser):
    long_script = "# check every door again\n" + "".join(f'print("door {i}")\n' for i in range(120))
    settings = {**FAST, "light_max_tokens": 150, "max_iterations": 1}
    with running_server(tmp_path / "srv", **settings) as srv:
        token = srv.token("carol")
        host = TestHost(srv.ws_url, token).start()
        try:
            model = write_script(scripts_dir / "markers.json", [
                [{"tool_call": {"name": "execute_task_automation", "input": {"code": 'doc.add("Door", "D1x")'}}}],
                # After a committed run the output budget is small: this long call is cut and retried.
                [{"text": "Verifying once more."},
                 {"tool_call": {"name": "execute_task_automation", "input": {"code": long_script}}}],
                [{"tool_call": {"name": "execute_task_automation", "input": {"code": 'print("third")'}}}],
                [{"text": "Stopping here."}],
            ])
            page = browser.page
            browser.enter_chat(srv.url, token)
            browser.ask("Add a door and check", model=model)
            page.wait_for_selector(".turn.assistant[data-state='complete']")
            assert page.locator(".marker.retry").count() == 1
            assert page.locator(".message", has_text="Verifying once more.").count() == 1
            cards = page.locator(".tool-card")
            assert cards.count() == 3
            assert cards.nth(1).locator("code[data-role='script']").text_content() == long_script
            assert cards.nth(1).get_attribute("data-state") == "committed"
            assert page.locator(".note.budget").count() == 1
            assert cards.nth(2).get_attribute("data-state") == "not-run"  # refused by the cap: nothing ran
            # A reload shows every marker again, where it was: the retry, the budget, the usage line.
            page.reload()
            browser.ready()
            page.wait_for_selector(".tool-card[data-state='not-run']")
            assert page.locator(".marker.retry").count() == 1 and page.locator(".note.budget").count() == 1
            assert page.locator(".turn.assistant").count() == 1 and page.locator(".run-footer .usage").count() == 1
            shown = page.evaluate("() => [...document.querySelectorAll('.run-body > *')].map(n =>"
                                  " n.classList.contains('retry') ? 'RETRY' : n.textContent.trim().slice(0, 20))")
            assert shown.index("RETRY") == shown.index("Verifying once more.") - 1, shown  # before the retried turn
        finally:
            host.stop()


def test_policy_ask_holds_each_change_until_the_person_keeps_or_discards_it(server, alice, host, scripts_dir,
                                                                            browser):
    model = write_script(scripts_dir / "ask.json", [
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": 'doc.add("Door", "KEEP-ME", "Level 1")'}}}],
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": 'doc.add("Door", "DROP-ME", "Level 1")'}}}],
        [{"text": "One kept, one discarded."}],
    ])
    page = browser.page
    browser.enter_chat(server.url, alice.token)
    page.fill("#model", model)
    page.select_option("#policy", "ask")
    browser.ask("Add two doors, asking me each time")

    first = page.locator(".tool-card").nth(0)
    first.locator(".approval").wait_for()
    assert first.get_attribute("data-state") == "awaiting"
    assert "KEEP-ME" in first.locator(".approval .change-report").text_content()
    assert not any(e["name"] == "KEEP-ME" for e in host.document.elements.values())  # held, not committed
    first.locator(".approval button", has_text="Keep").click()
    first.locator(".outcome", has_text="kept by alice").wait_for()

    second = page.locator(".tool-card").nth(1)
    second.locator(".approval").wait_for()
    second.locator(".approval-comment").fill("not this one")
    second.locator(".approval button", has_text="Discard").click()
    page.wait_for_selector(".turn.assistant[data-state='complete']")
    assert first.get_attribute("data-state") == "committed"
    assert second.get_attribute("data-state") == "discarded"
    assert "not this one" in second.text_content()
    names = {e["name"] for e in host.document.elements.values()}
    assert "KEEP-ME" in names and "DROP-ME" not in names


def test_a_failed_run_rolls_back_and_the_fix_arrives_as_edits(server, alice, host, scripts_dir, browser):
    broken = 'doors = doc.by_class("Door")\nfor i in doors:\n    doc.elements[i]["name"] = "X-" + doc.elements[i]["nmae"]\n'
    model = write_script(scripts_dir / "fix.json", [
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": broken}}}],
        [{"text": "A typo in the key; fixing it with an edit."},
         {"tool_call": {"name": "execute_task_automation",
                        "input": {"edits": [{"old": 'doc.elements[i]["nmae"]', "new": 'doc.elements[i]["name"]'}]}}}],
        [{"text": "All doors are prefixed now."}],
    ])
    page = browser.page
    browser.enter_chat(server.url, alice.token)
    browser.ask("Prefix every door name with X-", model=model)
    page.wait_for_selector(".turn.assistant[data-state='complete']")
    failed, fixed = page.locator(".tool-card").nth(0), page.locator(".tool-card").nth(1)
    assert failed.get_attribute("data-state") == "rolled-back"
    assert "Rolled back" in failed.locator(".outcome").text_content()
    error = failed.locator(".error-box").text_content()
    assert "KeyError" in error and "line 3" in error
    assert fixed.locator(".diff.old").text_content() == 'doc.elements[i]["nmae"]'
    assert fixed.locator(".diff.new").text_content() == 'doc.elements[i]["name"]'
    assert fixed.get_attribute("data-state") == "committed"
    assert all(e["name"].startswith("X-") for e in host.document.elements.values() if e["class"] == "Door")


def test_a_dropped_stream_reattaches_and_continues_where_it_left_off(server, alice, scripts_dir, browser):
    slow = TestHost(server.ws_url, alice.token, delay_s=3).start()
    host, port = server.url.removeprefix("http://").split(":")
    proxy = CuttingProxy(host, int(port))
    try:
        model = write_script(scripts_dir / "drop.json", [
            [{"text": "Adding a wall."},
             {"tool_call": {"name": "execute_task_automation", "input": {"code": 'doc.add("Wall", "W9")\nprint("ok")'}}}],
            [{"text": "The wall is in."}],
        ])
        page = browser.page
        reattached = []
        page.on("request", lambda r: reattached.append(r.url) if "/stream?after=" in r.url else None)
        browser.enter_chat(proxy.url, alice.token)
        browser.ask("Add a wall", model=model)
        page.wait_for_selector(".tool-card[data-state='running']")
        assert proxy.cut() >= 1
        page.wait_for_selector(".turn.assistant[data-state='complete']", timeout=20_000)
        assert reattached and not reattached[0].endswith("after=0")  # picked up after the chunks it had
        assert page.locator(".tool-card").count() == 1
        assert page.locator(".tool-card").get_attribute("data-state") == "committed"
        assert page.locator(".message", has_text="Adding a wall.").count() == 1
        assert page.locator(".message", has_text="The wall is in.").count() == 1
    finally:
        proxy.close()
        slow.stop()


def test_compaction_marker_vendor_error_and_cost_render_from_their_chunks(server, alice, host, browser):
    # A real vendor produces these; the scripted model cannot, so the stream is served as recorded frames.
    chunks = [
        {"type": "Metadata", "content": "anthropic:claude-sonnet-4-5",
         "metadata": {"kind": "model", "model": "anthropic:claude-sonnet-4-5", "vendor": "anthropic"}},
        {"type": "Metadata", "content": "Earlier conversation summarised to fit the context window",
         "metadata": {"kind": "compaction", "replaced": 12}},
        {"type": "Thinking", "content": "Looking at it again."},
        {"type": "Message", "content": "Let me **check**."},
        {"type": "AgenticUsage", "content": "12,000 in (9,000 cached) / 300 out · $0.0123",
         "metadata": {"uncached_input": 3000, "cache_read": 9000, "cache_write": 0, "output": 300, "cost": 0.0123}},
        {"type": "Error", "content": "The vendor is overloaded.",
         "metadata": {"vendor": "anthropic", "status": 529, "retry_after": 30}},
    ]
    body = "".join(f"id: {i}\nevent: {c['type']}\ndata: {json.dumps(c)}\n\n" for i, c in enumerate(chunks))
    page = browser.page
    page.route("**/api/sessions/*/messages", lambda route: route.fulfill(
        status=200, headers={"Content-Type": "text/event-stream"}, body=": stream open\n\n" + body))
    browser.enter_chat(server.url, alice.token)
    browser.ask("Check again", model="anthropic:claude-sonnet-4-5")
    page.wait_for_selector(".turn.assistant[data-state='error']")
    assert "summarised" in page.locator(".marker.compaction").text_content()
    assert page.locator(".model-label").last.text_content() == "anthropic:claude-sonnet-4-5"
    error = page.locator(".run-error").text_content()
    assert "overloaded" in error and "anthropic · 529" in error and "Retry after 30 s" in error
    assert "$0.01 est." in page.locator(".usage").text_content()
    assert "12,000 tokens in (9,000 cached)" in page.locator(".usage").text_content()
