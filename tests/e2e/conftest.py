"""Real-browser fixtures: Debian's Chromium driven by Playwright against the real test server."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright import sync_api

from tests.conftest import FAST
from tests.support.client import Client
from tests.support.server import RunningServer, running_server

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


# Records, on every DOM change, how much of each streaming script is shown and the card's state; this
# is how a test sees the script grow while it is being written.
WATCH_SCRIPTS = """
window.__scriptSamples = [];
new MutationObserver(() => {
  for (const code of document.querySelectorAll('code[data-role="script"]')) {
    const card = code.closest('.tool-card');
    window.__scriptSamples.push({id: card.dataset.toolCallId, state: card.dataset.state, length: code.textContent.length});
  }
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


@dataclass
class BrowserPage:
    """A page with the problems it ran into: uncaught errors and dialogs (alert, confirm...)."""

    page: Any
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def sign_in(self, url: str, token: str, path: str = "/", query: str = "") -> None:
        """Sign in as a person does: the sign-in form (a same-origin POST), then the page asked for."""
        self.page.goto(f"{url}/" + (f"?{query.lstrip('&')}" if query else ""))
        self.page.fill("input[name=token]", token)
        with self.page.expect_navigation():
            self.page.click("button[type=submit]")
        if path != "/":
            self.page.goto(url + path)

    def ready(self) -> None:
        # Generous: the first page of a cold browser on a loaded machine can take well over 10 s.
        self.page.wait_for_selector("body[data-ready='1']", timeout=60_000)

    def enter_chat(self, url: str, token: str, query: str = "") -> None:
        """Sign in, then wait until the chat page is ready."""
        self.sign_in(url, token, query=query)
        self.ready()

    def ask(self, prompt: str, model: str | None = None) -> None:
        """Type a request on the chat page (with this model spec, if given) and send it."""
        if model is not None:
            self.page.fill("#model", model)
        self.page.fill("#prompt", prompt)
        self.page.click("#send")

    def send(self, prompt: str, model: str | None = None) -> None:
        """Ask, then wait until the assistant's turn completes."""
        self.ask(prompt, model)
        self.page.wait_for_selector(".turn.assistant[data-state='complete']", timeout=60_000)

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / name
        self.page.screenshot(path=str(path), full_page=False)
        return path


def open_chat(browser_factory: Any, server_url: str, client: Client, host_id: str, width: int, height: int,
              warm_timeout_s: float = 120) -> BrowserPage:
    """A fresh browser signed in as `client` on the chat page, with `host_id` chosen, once the page is ready."""
    # The first /api/models imports every vendor SDK; on a loaded 2-core machine that alone can outlast
    # the page's readiness budget, which is about the page, not about imports.
    assert client.call("GET", "/api/models", timeout=warm_timeout_s).status_code == 200
    browser = browser_factory(width=width, height=height)
    browser.enter_chat(server_url, client.token or "", query=f"&host={host_id}")
    return browser


class Chromium:
    """Playwright's driver and one Chromium, launched on the first page a module asks for: each page gets a fresh
    context of it (its own cookies, storage and cache, as a new profile has), which takes milliseconds where a
    new Chromium process takes seconds of CPU."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self._browser: Any = None

    def context(self, width: int, height: int) -> Any:
        if self._browser is None or not self._browser.is_connected():
            self._browser = self.driver.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                                        args=CHROMIUM_ARGS)
        return self._browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)

    def close(self) -> None:
        if self._browser is not None and self._browser.is_connected():
            self._browser.close()


# Per module, not per session: Playwright's sync API allows one driver at a time in a process, and
# browser tests outside tests/e2e start their own (or import these fixtures) after these modules ran.
@pytest.fixture(scope="module")
def playwright_driver() -> Iterator[Chromium]:
    # scripts/test installs Chromium (CI runs it): a missing browser fails every browser test, never skips.
    if not CHROMIUM.exists():
        pytest.fail(f"browser tests need Debian's Chromium at {CHROMIUM}: run scripts/test, or apt-get install "
                    "chromium", pytrace=False)
    with sync_api.sync_playwright() as driver:
        chromium = Chromium(driver)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def browser_factory(playwright_driver) -> Iterator[Any]:
    """Open pages, each in a fresh browser context (nothing shared with another page); all closed at the end."""
    contexts: list[Any] = []
    pages: list[BrowserPage] = []

    def open_page(width: int = 1280, height: int = 860) -> BrowserPage:
        context = playwright_driver.context(width, height)
        context.set_default_timeout(15_000)
        contexts.append(context)
        page = context.new_page()
        watched = BrowserPage(page)
        page.add_init_script(WATCH_SCRIPTS)
        page.on("pageerror", lambda exc: watched.errors.append(str(exc)))
        page.on("dialog", lambda dialog: (watched.dialogs.append(dialog.message), dialog.dismiss()))
        pages.append(watched)
        return watched

    yield open_page
    for context in contexts:
        context.close()
    for watched in pages:
        assert not watched.errors, f"uncaught errors in the page: {watched.errors}"


@pytest.fixture
def browser(browser_factory) -> BrowserPage:
    return browser_factory()


@pytest.fixture
def server(tmp_path, scripts_dir) -> Iterator[RunningServer]:
    """The shared test server, with a tool timeout long enough for the slow-host tests (hint after 10 s)."""
    with running_server(tmp_path, **{**FAST, "tool_timeout_s": 30.0}) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _quiet_env(monkeypatch) -> None:
    # Vendor keys on a developer's machine must not change which models the page offers.
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(key, raising=False)
