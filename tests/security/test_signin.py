"""Browser sign-in over HTTP: same-origin POST only, one-time links, web sessions, no open redirect."""
from __future__ import annotations

import requests

from tests.support.server import running_server


def _post_signin(server, token: str, next_path: str = "/", headers: dict | None = None) -> requests.Response:
    return requests.post(server.url + "/signin", data={"token": token, "next": next_path}, headers=headers or {},
                         allow_redirects=False, timeout=10)


def test_the_cookie_holds_a_web_session_id_that_expires_and_never_the_token(server, alice):
    signed_in = _post_signin(server, alice.token)
    assert signed_in.status_code == 302
    header = signed_in.headers["Set-Cookie"]
    assert alice.token not in header and "HttpOnly" in header and "SameSite=Strict" in header
    assert "Max-Age=43200" in header and "Secure" not in header
    me = requests.get(server.url + "/api/me", cookies=signed_in.cookies, timeout=10)
    assert me.status_code == 200 and me.json()["user"] == "alice"


def test_sign_out_ends_the_web_session_on_the_server(server, alice):
    cookies = _post_signin(server, alice.token).cookies
    out = requests.post(server.url + "/signout", cookies=cookies, allow_redirects=False, timeout=10)
    assert out.status_code == 302
    # The old cookie value no longer works, even if the browser (or a thief) kept it.
    assert requests.get(server.url + "/api/me", cookies=cookies, timeout=10).status_code == 401


def test_revoking_the_token_ends_its_web_sessions(server, alice):
    admin = requests.Session()
    admin.headers["Authorization"] = f"Bearer {server.token('root', admin=True)}"
    cookies = _post_signin(server, alice.token).cookies
    (row,) = [t for t in admin.get(server.url + "/api/admin/tokens").json()["tokens"] if t["user_name"] == "alice"]
    assert admin.delete(f"{server.url}/api/admin/tokens/{row['id']}").status_code == 200
    assert requests.get(server.url + "/api/me", cookies=cookies, timeout=10).status_code == 401
    assert requests.get(server.url + "/", cookies=cookies, timeout=10).status_code == 401


def test_a_cross_site_sign_in_post_is_refused(server, alice):
    for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"},
                    {"Origin": server.url.replace("127.0.0.1", "localhost")}):
        refused = _post_signin(server, alice.token, headers=headers)
        assert refused.status_code == 403 and "nexus_session" not in refused.cookies, headers
    assert _post_signin(server, alice.token, headers={"Origin": server.url}).status_code == 302


def test_a_token_in_the_address_signs_no_one_in(server, alice):
    response = requests.get(f"{server.url}/?token={alice.token}", allow_redirects=False, timeout=10)
    assert response.status_code == 401 and "nexus_session" not in response.cookies
    assert alice.token not in response.text


def test_the_demos_one_time_link_signs_in_once(server, alice):
    code = server.state.store.create_signin_code(alice.token)
    first = requests.get(f"{server.url}/?signin={code}&host=h_1", allow_redirects=False, timeout=10)
    assert first.status_code == 302 and first.headers["Location"] == "/?host=h_1"
    assert requests.get(server.url + "/api/me", cookies=first.cookies, timeout=10).json()["user"] == "alice"
    again = requests.get(f"{server.url}/?signin={code}", allow_redirects=False, timeout=10)
    assert again.status_code == 401 and "nexus_session" not in again.cookies


def test_next_never_leads_off_the_server(server, alice):
    for target in ("/\t/evil.example", "/\n/evil.example", "//evil.example", "/\\evil.example",
                   "https://evil.example", "/\r\nSet-Cookie: x=1"):
        response = _post_signin(server, alice.token, next_path=target)
        assert response.status_code == 302 and response.headers["Location"] == "/", target
    assert _post_signin(server, alice.token, next_path="/admin#tab=audit").headers["Location"] == "/admin#tab=audit"
    page = requests.get(server.url + "/?x=%0A", timeout=10)
    assert page.status_code == 401 and "text/html" in page.headers["Content-Type"]


def test_behind_a_trusted_tls_proxy_the_cookie_is_secure(tmp_path, scripts_dir):
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "nexus.example"}
    with running_server(tmp_path, trusted_proxies=1) as proxied:
        token = proxied.token("alice")
        behind = _post_signin(proxied, token, headers={**forwarded, "Origin": "https://nexus.example"})
        assert behind.status_code == 302 and "Secure" in behind.headers["Set-Cookie"]
    with running_server(tmp_path / "direct") as direct:
        token = direct.token("alice")
        # Without the setting nobody's X-Forwarded-Proto is believed: no Secure flag, and the Origin of the
        # claimed host is cross-origin.
        assert "Secure" not in _post_signin(direct, token, headers=forwarded).headers["Set-Cookie"]
        assert _post_signin(direct, token, headers={**forwarded, "Origin": "https://nexus.example"}).status_code == 403
