"""In Chromium: login CSRF, token links, and the host websocket from a page of another origin."""
from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from cloud.vendors.registry import configured_vendors


@pytest.fixture(autouse=True, scope="module")
def _vendor_sdks_imported() -> None:
    """The chat page is ready once GET /api/models answers; its first answer imports every vendor SDK
    (seconds on a busy machine). Pay that here, not inside the page's readiness wait."""
    configured_vendors()


@pytest.fixture
def other_origin(tmp_path) -> Iterator[tuple[str, Path]]:
    """A second web server on another port (another origin): the attacker's pages."""
    pages = tmp_path / "evil"
    pages.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(pages))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", pages
    server.shutdown()


def _cookies(page) -> dict[str, str]:
    return {c["name"]: c["value"] for c in page.context.cookies()}


def test_a_cross_site_form_cannot_sign_the_victim_in(server, browser, other_origin):
    evil_url, pages = other_origin
    attacker_token = server.token("mallory")
    (pages / "signin.html").write_text(
        f'<form id="f" method="post" action="{server.url}/signin">'
        f'<input name="token" value="{attacker_token}"><input name="next" value="/"></form>'
        '<script>document.getElementById("f").submit()</script>')
    page = browser.page
    response = page.goto(f"{evil_url}/signin.html")
    page.wait_for_url(f"{server.url}/signin")
    assert "nexus_session" not in _cookies(page)
    assert "only accepted from this server" in page.content()
    assert page.goto(server.url + "/").status == 401  # still signed out
    assert response is not None


def test_a_token_link_from_another_site_signs_no_one_in(server, browser, other_origin):
    evil_url, pages = other_origin
    attacker_token = server.token("mallory")
    (pages / "link.html").write_text(f'<a id="a" href="{server.url}/?token={attacker_token}">prize</a>')
    page = browser.page
    page.goto(f"{evil_url}/link.html")
    page.click("#a")
    page.wait_for_load_state()
    assert "nexus_session" not in _cookies(page)
    assert page.locator("input[name=token]").count() == 1  # the sign-in form, not mallory's chat


def test_a_page_of_another_origin_cannot_open_the_host_socket_with_the_cookie(server, alice, browser, other_origin):
    evil_url, pages = other_origin
    browser.sign_in(server.url, alice.token)
    browser.ready()
    ws_url = server.url.replace("http://", "ws://") + "/ws/host"
    (pages / "ws.html").write_text(
        "<script>window.result = new Promise(done => {"
        f"const ws = new WebSocket('{ws_url}');"
        "ws.onopen = () => { ws.send(JSON.stringify({type: 'hello', host_app: 'test', host_version: 't', "
        "runtime_version: '1', python_version: '3', document: {title: 'evil'}})); };"
        "ws.onmessage = m => done('message: ' + m.data); ws.onclose = e => done('closed ' + e.code);"
        "ws.onerror = () => done('error'); });</script>")
    page = browser.page
    page.goto(f"{evil_url}/ws.html")
    outcome = page.evaluate("() => window.result")
    assert not outcome.startswith("message"), outcome
    assert server.state.hosts.for_user("alice") == []
    # The same page on the server's own origin gets no further either: hosts need a bearer token.
    page.goto(server.url + "/")
    browser.ready()
    same_origin = page.evaluate(
        "url => new Promise(done => { const ws = new WebSocket(url); ws.onmessage = m => done('message');"
        " ws.onclose = e => done('closed'); ws.onerror = () => done('error'); })", ws_url)
    assert same_origin in ("error", "closed") and server.state.hosts.for_user("alice") == []


def test_signing_out_ends_the_session_on_the_server(server, alice, browser):
    browser.sign_in(server.url, alice.token)
    browser.ready()
    page = browser.page
    old = _cookies(page)["nexus_session"]
    page.evaluate("() => { const f = document.createElement('form'); f.method = 'post'; f.action = '/signout';"
                  " document.body.appendChild(f); f.submit(); }")
    page.wait_for_selector("input[name=token]")
    assert requests.get(server.url + "/api/me", cookies={"nexus_session": old}, timeout=10).status_code == 401
