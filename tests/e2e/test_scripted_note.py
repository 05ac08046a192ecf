"""The chat page says plainly when the model is a scripted replay (the offline demo), and only then."""
from __future__ import annotations

from tests.support.client import write_script


def test_a_scripted_model_is_announced_and_a_vendor_model_is_not(server, alice, host, scripts_dir, browser):
    model = write_script(scripts_dir / "demo.json", [[{"text": "Hello."}]])
    page = browser.page
    browser.sign_in(server.url, alice.token)
    browser.ready()
    page.fill("#model", model)
    assert page.locator("#scripted-note").is_visible()
    assert "Scripted demo" in page.locator("#scripted-note").text_content()
    page.fill("#model", "anthropic:claude-sonnet-4-6")
    assert not page.locator("#scripted-note").is_visible()
