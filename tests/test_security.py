"""Authentication on every route, and isolation between users' sessions and hosts."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import requests
import websocket

from tests.support.client import Client, write_script
from tests.support.spine import collect, run_to_tool_call, say
from tests.support.test_host import TestHost

STATIC_DIR = Path(__file__).resolve().parents[1] / "cloud" / "static"
NOT_PROTECTED = {"/signout"}  # only clears a cookie


def _routes(server) -> list[tuple[str, str]]:
    """Every (method, rule) the app serves."""
    app = server.handle.server.app
    out = []
    for rule in app.url_map.iter_rules():
        if rule.rule in NOT_PROTECTED:
            continue
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            out.append((method, rule.rule))
    return out


def _fill(rule: str, values: dict[str, str]) -> str:
    return re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", lambda m: values.get(m.group(1), "x"), rule)


@pytest.fixture
def bob(server) -> Client:
    return Client(server.url, server.token("bob"))


@pytest.fixture
def alices_session(alice, host, scripts_dir) -> str:
    spec = write_script(scripts_dir / "a.json", [collect("print('secret')"), say("done")])
    session_id = alice.new_session(host.host_id, spec)
    alice.run(session_id, "look")
    return session_id


def test_every_route_answers_401_without_a_valid_token(server, alices_session):
    static_file = next(p for p in sorted(STATIC_DIR.rglob("*")) if p.is_file())
    values = {"session_id": alices_session, "filename": str(static_file.relative_to(STATIC_DIR)),
              "tool_call_id": "call_x", "image_id": "img", "token_id": "tok", "user_name": "alice"}
    routes = [*_routes(server), ("GET", "/ws/host")]  # the host gate, mounted in front of the app's routes
    assert len(routes) >= 25 and ("GET", "/static/<path:filename>") in routes
    for token in (None, "nx_not-a-real-token", ""):
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        for method, rule in routes:
            response = requests.request(method, server.url + _fill(rule, values), headers=headers, json={},
                                        timeout=10)
            assert response.status_code == 401, (method, rule, token, response.status_code)
            assert "secret" not in response.text


def test_static_files_are_served_with_a_token(server, alice):
    static_file = next(p for p in sorted(STATIC_DIR.rglob("*")) if p.is_file())
    response = alice.call("GET", "/static/" + str(static_file.relative_to(STATIC_DIR)))
    assert response.status_code == 200 and response.content == static_file.read_bytes()


def test_the_host_websocket_refuses_an_upgrade_without_a_valid_token(server):
    for header in ([], ["Authorization: Bearer nx_wrong"]):
        with pytest.raises(websocket.WebSocketBadStatusException) as refused:
            websocket.create_connection(server.ws_url, header=header, timeout=10)
        assert refused.value.status_code == 401


def test_a_revoked_token_stops_working(server):
    admin = Client(server.url, server.token("root", admin=True))
    token = server.token("carol")
    carol = Client(server.url, token)
    assert carol.call("GET", "/api/me").status_code == 200
    (row,) = [t for t in admin.call("GET", "/api/admin/tokens").json()["tokens"] if t["user_name"] == "carol"]
    assert admin.call("DELETE", f"/api/admin/tokens/{row['id']}").status_code == 200
    assert carol.call("GET", "/api/me").status_code == 401
    with pytest.raises(websocket.WebSocketBadStatusException):
        websocket.create_connection(server.ws_url, header=[f"Authorization: Bearer {token}"], timeout=10)


def test_admin_routes_need_an_admin_token(server, alice):
    for method, rule in _routes(server):
        if rule.startswith("/api/admin/"):
            response = alice.call(method, _fill(rule, {}), json={})
            assert response.status_code == 403, (method, rule)
    assert alice.call("GET", "/admin").status_code == 403


def _web_session(server, token: str) -> dict[str, str]:
    signed_in = requests.post(server.url + "/signin", data={"token": token, "next": "/"}, allow_redirects=False,
                              timeout=10)
    assert signed_in.status_code == 302, signed_in.text
    return {"nexus_session": signed_in.cookies["nexus_session"]}


def test_cookie_sign_in_needs_the_csrf_header_to_change_state(server, alice, host):
    assert requests.get(server.url + "/api/me", cookies={"nexus_token": alice.token}, timeout=10).status_code == 401
    cookies = _web_session(server, alice.token)
    assert requests.get(server.url + "/api/me", cookies=cookies, timeout=10).status_code == 200
    body = {"host_id": host.host_id}
    forged = requests.post(server.url + "/api/sessions", cookies=cookies, json=body, timeout=10)
    assert forged.status_code == 403
    same_site = requests.post(server.url + "/api/sessions", cookies=cookies, json=body,
                              headers={"X-Requested-With": "nexus"}, timeout=10)
    assert same_site.status_code == 201


def test_another_user_can_neither_read_nor_drive_a_session(server, alice, bob, host, alices_session):
    result_id = server.state.store.transcript(alices_session)[1]["content"][-1]["id"]
    attempts = [
        ("GET", "", None), ("POST", "/messages", {"text": "hi"}), ("POST", "/cancel", None),
        ("POST", "/tool-results", {"tool_call_id": result_id, "result": {"type": "error", "message": "x"}}),
        ("PUT", "/policy", {"policy": "readonly"}), ("PUT", "/host", {"host_id": host.host_id}),
        ("GET", "/stream", None), ("GET", f"/results/{result_id}", None), ("GET", "/images/x", None),
        ("POST", "/approval", {"tool_call_id": result_id, "decision": "keep"}),
    ]
    for method, suffix, body in attempts:
        response = bob.call(method, f"/api/sessions/{alices_session}{suffix}", json=body)
        unknown = bob.call(method, f"/api/sessions/{'0' * 32}{suffix}", json=body)
        assert response.status_code == unknown.status_code == 404, (method, suffix, response.status_code)
        assert response.json()["error"].replace(alices_session, "ID") == unknown.json()["error"].replace("0" * 32, "ID")
        assert "secret" not in response.text
    listed = bob.call("GET", "/api/sessions").json()["sessions"]
    assert alices_session not in {s["id"] for s in listed}
    previews = bob.call("GET", "/api/sessions/previews").json()["previews"]
    assert alices_session not in previews
    # Alice's session is untouched and still hers.
    mine = alice.call("GET", f"/api/sessions/{alices_session}").json()
    assert mine["policy"] != "readonly" and mine["host_id"] == host.host_id
    assert alice.call("GET", f"/api/sessions/{alices_session}/results/{result_id}").status_code == 200


def test_another_user_cannot_cancel_or_answer_a_running_session(server, alice, bob, scripts_dir):
    silent = TestHost(server.ws_url, alice.token, silent=True).start()
    try:
        spec = write_script(scripts_dir / "run.json", [collect("print(1)"), say("done")])
        session_id, run, _ = run_to_tool_call(alice, silent.host_id, spec)
        assert bob.call("POST", f"/api/sessions/{session_id}/cancel").status_code == 404
        assert bob.call("GET", f"/api/sessions/{session_id}/stream").status_code == 404
        assert alice.call("POST", f"/api/sessions/{session_id}/cancel").status_code == 202
        assert run.join(10).last["metadata"]["cancelled"] is True
    finally:
        silent.stop()


def test_another_users_host_is_invisible_and_unusable(server, alice, bob, host, scripts_dir):
    assert [h["host_id"] for h in alice.call("GET", "/api/hosts").json()["hosts"]] == [host.host_id]
    assert bob.call("GET", "/api/hosts").json()["hosts"] == []
    refused = bob.call("POST", "/api/sessions", json={"host_id": host.host_id})
    unknown = bob.call("POST", "/api/sessions", json={"host_id": "h_000000000000"})
    assert refused.status_code == unknown.status_code == 404
    assert refused.json()["error"].replace(host.host_id, "ID") == unknown.json()["error"].replace("h_000000000000", "ID")
    own = bob.new_session()
    assert bob.call("PUT", f"/api/sessions/{own}/host", json={"host_id": host.host_id}).status_code == 404
    # A runtime of bob's that asks for alice's host id gets a fresh one; alice's host keeps its route.
    impostor = TestHost(server.ws_url, bob.token, host_id=host.host_id).start()
    try:
        assert impostor.host_id != host.host_id
        assert server.state.hosts.get(host.host_id).user_name == "alice"
        assert [h["host_id"] for h in bob.call("GET", "/api/hosts").json()["hosts"]] == [impostor.host_id]
    finally:
        impostor.stop()


def test_a_session_never_dispatches_to_another_users_host(server, alice, bob, host, scripts_dir):
    """Even if a session row pointed at a foreign host, the loop refuses to use it."""
    spec = write_script(scripts_dir / "b.json", [collect("print(1)"), say("done")])
    session_id = bob.new_session(None, spec)
    server.state.store.update_session(session_id, host_id=host.host_id)
    stream = bob.run(session_id, "go")
    assert stream.last["type"] == "Complete"
    assert not any(m["type"] == "execute" for m in host.received)
    assert "No host application is connected" in stream.of("Metadata", "tool_result")[0]["content"]
