"""Every tool's input card renders its arguments, live and when the conversation is read back."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cloud.vendors.registry import configured_vendors
from tests.support.client import write_script

TOOLS_DIR = Path(__file__).resolve().parents[2] / "shared_contract" / "tools"

# One call per tool (every argument filled in), in the order the scripted model makes them.
CALLS = [
    ("execute_data_collection", {"code": "print(len(doc.elements))"}),
    ("execute_task_automation", {"code": "doc.add('Door', 'D9')"}),
    ("execute_task_automation", {"edits": [{"old": "'D9'", "new": "'D10'"}]}),
    ("capture_view", {"view": "Level 1", "element_ids": [3, 5]}),
    ("lookup_api", {"query": "FilteredElementCollector"}),
    ("find_skill", {"query": "renumber doors"}),
    ("run_skill", {"name": "Renumber doors", "args": {"prefix": "D2-", "start": 1}}),
]


@pytest.fixture(autouse=True, scope="module")
def _vendor_sdks_imported() -> None:
    """The chat page is ready once GET /api/models answers; its first answer imports every vendor SDK
    (seconds on a busy machine). Pay that here, not inside the page's readiness wait."""
    configured_vendors()


def _shown(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _check_cards(page) -> None:
    cards = page.locator(".tool-card")
    assert cards.count() == len(CALLS)
    for index, (name, arguments) in enumerate(CALLS):
        card = cards.nth(index)
        assert card.get_attribute("data-tool") == name
        shown = card.locator(".tool-input").inner_text()
        assert "[object" not in shown, (name, shown)
        if "code" in arguments:
            assert card.locator("code[data-role='script']").text_content() == arguments["code"]
        elif "edits" in arguments:
            for edit in arguments["edits"]:
                assert edit["old"] in shown and edit["new"] in shown, (name, shown)
        else:
            keys = card.locator(".tool-args dt").all_text_contents()
            values = card.locator(".tool-args dd").all_text_contents()
            assert dict(zip(keys, values, strict=True)) == {k: _shown(v) for k, v in arguments.items()}, (name, shown)


def test_every_tools_input_card_shows_its_arguments(server, alice, host, scripts_dir, browser):
    assert {name for name, _ in CALLS} == {p.stem for p in TOOLS_DIR.glob("*.json")}, "a tool has no example here"
    turns = [[{"tool_call": {"name": name, "input": arguments}}] for name, arguments in CALLS]
    model = write_script(scripts_dir / "tools.json", [*turns, [{"text": "All five calls made."}]])
    page = browser.page
    browser.sign_in(server.url, alice.token)
    browser.ready()
    page.wait_for_function(f"() => [...document.querySelectorAll('#host option')].some(o => o.value === {host.host_id!r})")
    page.fill("#model", model)
    page.fill("#prompt", "Use every tool once")
    page.click("#send")
    page.wait_for_selector(".turn.assistant[data-state='complete']", timeout=60_000)
    _check_cards(page)
    page.reload()  # the same cards, built from the stored conversation
    browser.ready()
    page.wait_for_selector(".tool-card")
    page.wait_for_function(f"() => document.querySelectorAll('.tool-card').length === {len(CALLS)}")
    _check_cards(page)
