"""The scripted demo tells the truth (issue 22, item 8), in a real browser on the real IFC host: each landing
example plays its own script, and the renumbering's replayed words match what happened under read-only,
ask-then-discard and apply-automatically."""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import ifcopenshell

from ifc_host import sample
from tests.e2e.conftest import open_chat
from tests.support.real_ifc import connected_host, digest

DEMO_DIR = Path(__file__).resolve().parents[2] / "cloud" / "demo"
RENUMBER = "Give the doors on Level 2 unique marks."
COMMITTED_WORDS = "now carry unique marks"


def _fresh(page, policy: str, example: str) -> None:
    page.click("#new-session")
    page.select_option("#policy", policy)
    page.click(f".empty [data-example='{example}']")


def _final_message(page) -> str:
    page.wait_for_selector(".turn.assistant[data-state='complete']", timeout=120_000)
    return page.locator(".turn.assistant .message").last.text_content()


def test_the_demo_examples_and_the_renumbering_say_what_really_happened(server, alice, scripts_dir, tmp_path,
                                                                        browser_factory):
    for script in DEMO_DIR.glob("*.json"):
        shutil.copy(script, scripts_dir / script.name)
    model_path = tmp_path / "sample-building.ifc"
    sample.write_sample_model(model_path, storeys=3)
    before = digest(model_path)
    with connected_host(model_path, server.url, alice.token) as (_, host_id):
        browser = open_chat(browser_factory, server.url, alice, host_id, 1280, 1000)
        page = browser.page
        page.fill("#model", f"scripted:{scripts_dir / 'renumber_doors.json'}")

        # The counting example plays the counting script: an inspection, nothing changed.
        _fresh(page, "auto", "How many doors are there on each storey?")
        assert page.input_value("#model") == f"scripted:{scripts_dir / 'count_doors.json'}"
        page.click("#send")
        text = _final_message(page)
        assert "10 doors on Level 1" in text and "nothing in the model changed" in text
        assert "Level 1      10 doors" in page.locator(".tool-card .output").text_content()
        assert page.locator(".tool-card").count() == 1 and digest(model_path) == before

        # Read-only: the automation is refused, and the replay says so (no "Committed").
        _fresh(page, "readonly", RENUMBER)
        assert page.input_value("#model").endswith("renumber_doors.json")
        page.click("#send")
        text = _final_message(page)
        assert "read-only" in text and COMMITTED_WORDS not in text and "Committed" not in text
        assert page.locator(".tool-card[data-state='not-run']").count() == 1
        assert digest(model_path) == before

        # Ask, then Discard: the replay says nothing was committed.
        _fresh(page, "ask", RENUMBER)
        page.click("#send")
        page.locator(".approval button.danger").click(timeout=120_000)
        text = _final_message(page)
        assert "discarded" in text and COMMITTED_WORDS not in text
        assert page.locator(".tool-card[data-state='discarded']").count() == 1
        assert digest(model_path) == before

        # Apply automatically: committed, and the replay says so.
        _fresh(page, "auto", RENUMBER)
        page.click("#send")
        text = _final_message(page)
        assert COMMITTED_WORDS in text
        assert page.locator(".tool-card[data-state='committed']").count() == 1
        deadline = time.monotonic() + 20
        while digest(model_path) == before and time.monotonic() < deadline:
            time.sleep(0.1)
        marks = sorted(d.Tag for d in ifcopenshell.open(str(model_path)).by_type("IfcDoor")
                       if (d.Tag or "").startswith("D2-"))
        assert marks == [f"D2-{n:02d}" for n in range(1, 9)]
