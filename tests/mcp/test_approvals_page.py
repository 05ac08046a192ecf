"""A held change of an MCP client that cannot ask the person, decided in Chromium on the chat page: the
page's pending-approvals list shows it, opens its session, and the session shows the change's approval card,
the same as a chat run's; Keep there commits, and review_status reports it to the client."""
from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from cloud.mcp.http import start_mcp_http
from tests.e2e.conftest import browser_factory, open_chat, playwright_driver  # noqa: F401 (fixtures)
from tests.mcp.support import http_session, text_of

SCRIPT = 'doc.add("Door", "D-MCP", "Level 1")\nprint("added")\n'


def _off_the_page_thread(scenario: Callable[[], Awaitable[Any]]) -> Any:
    """The MCP client's event loop on a thread of its own (Playwright's sync API holds this thread's)."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(anyio.run(scenario)))
    thread.start()
    thread.join(120)
    assert out, "the MCP call did not finish"
    return out[0]


def test_the_chat_page_lists_an_mcp_held_change_and_keeps_it(server, alice, host, browser_factory):  # noqa: F811
    endpoint = start_mcp_http(server.state, chat_url=server.url)
    server.state.store.set_user_policy("alice", "ask")
    try:
        async def held_call():
            async with http_session(endpoint.url, alice.token) as session:
                return await session.call_tool("execute_task_automation", {"code": SCRIPT})

        held = _off_the_page_thread(held_call)
        assert held.structured_content["review_status"] == "pending", text_of(held)
        call_id = held.structured_content["tool_call_id"]

        browser = open_chat(browser_factory, server.url, alice, host.host_id, 1280, 860)
        page = browser.page
        listed = page.locator("#approvals")
        listed.wait_for(state="visible", timeout=20_000)
        assert "A change waits for your decision" in listed.text_content()
        assert "MCP client" in listed.text_content()
        listed.locator(f"li[data-tool-call-id='{call_id}'] a").click()
        card = page.locator(f".approval[data-tool-call-id='{call_id}']")
        card.wait_for(state="visible", timeout=30_000)
        assert "D-MCP" in page.locator(".turn.assistant").last.text_content()  # the call's script, on its card
        card.locator("button", has_text="Keep").click()

        async def later():
            async with http_session(endpoint.url, alice.token) as session:
                return await session.call_tool("review_status", {"tool_call_id": call_id, "wait_s": 60})

        decided = _off_the_page_thread(later)
        listed.wait_for(state="hidden", timeout=20_000)
    finally:
        server.state.store.set_user_policy("alice", "auto")
        endpoint.shutdown()
    assert decided.structured_content["committed"] is True, text_of(decided)
    assert decided.structured_content["decision"]["by"] == "alice"
    assert [e for e in host.document.elements.values() if e["name"] == "D-MCP"]
