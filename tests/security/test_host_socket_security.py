"""The host websocket: ownership that survives a restart, Origin and cookie refused, takeover closes,
host text logged safely, and the server (not the host) says who decided."""
from __future__ import annotations

import json
import logging
import sys
import threading

import pytest
import requests
import websocket

from tests.support.client import Client, write_script
from tests.support.server import running_server
from tests.support.spine import automate, say, wait_until
from tests.support.test_host import TestHost

HELLO = {"type": "hello", "host_app": "test", "host_version": "t", "runtime_version": "1",
         "python_version": sys.version.split()[0], "document": {"title": "Raw"}}


def _raw(server, token: str, host_id: str | None = None, title: str = "Raw") -> tuple[websocket.WebSocket, str]:
    ws = websocket.create_connection(server.ws_url, header=[f"Authorization: Bearer {token}"], timeout=10)
    ws.send(json.dumps({**HELLO, "document": {"title": title}, **({"host_id": host_id} if host_id else {})}))
    welcome = json.loads(ws.recv())
    assert welcome["type"] == "welcome"
    return ws, welcome["host_id"]


def test_after_a_restart_another_user_cannot_claim_an_old_host_id(tmp_path, scripts_dir):
    db = tmp_path / "nexus.db"
    with running_server(tmp_path, db_path=db) as first:
        alice_token, bob_token = first.token("alice"), first.token("bob")
        ws, host_id = _raw(first, alice_token, title="Alice's tower")
        ws.close()
    with running_server(tmp_path, db_path=db) as second:
        ws, claimed = _raw(second, bob_token, host_id=host_id, title="Forged by bob")
        try:
            assert claimed != host_id
            assert second.state.hosts.get(host_id) is None
            alice = Client(second.url, alice_token)
            # Alice's session naming her old host does not pick up bob's document in its prompt.
            refused = Client(second.url, bob_token).call("POST", "/api/sessions", json={"host_id": host_id})
            assert refused.status_code == 404
            assert alice.call("POST", "/api/sessions", json={"host_id": host_id}).status_code == 201
        finally:
            ws.close()
        back, reclaimed = _raw(second, alice_token, host_id=host_id)
        back.close()
        assert reclaimed == host_id


def test_the_host_socket_refuses_a_cross_origin_browser_and_the_cookie(server, alice):
    signed_in = requests.post(server.url + "/signin", data={"token": alice.token}, allow_redirects=False, timeout=10)
    cookie = f"nexus_session={signed_in.cookies['nexus_session']}"
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        websocket.create_connection(server.ws_url, cookie=cookie, origin=server.url, timeout=10)
    assert refused.value.status_code == 401
    with pytest.raises(websocket.WebSocketBadStatusException) as cross:
        websocket.create_connection(server.ws_url, header=[f"Authorization: Bearer {alice.token}"],
                                    origin="http://evil.example", timeout=10)
    assert cross.value.status_code == 403
    # A host runtime sends no Origin (or its server's own) and gets in.
    for kwargs in ({"suppress_origin": True}, {"origin": server.url}):
        ws = websocket.create_connection(server.ws_url, header=[f"Authorization: Bearer {alice.token}"], timeout=10,
                                         **kwargs)
        ws.send(json.dumps(HELLO))
        assert json.loads(ws.recv())["type"] == "welcome"
        ws.close()


def test_a_host_whose_id_is_taken_over_is_closed(server, alice):
    old, host_id = _raw(server, alice.token)
    new, same = _raw(server, alice.token, host_id=host_id)
    try:
        assert same == host_id and server.state.hosts.get(host_id) is not None
        seen = []
        with pytest.raises(websocket.WebSocketConnectionClosedException):
            for _ in range(20):
                seen.append(old.recv())
                if not seen[-1]:
                    raise websocket.WebSocketConnectionClosedException("closed")
        assert any("taken over" in (m or "") for m in seen)
        new.send(json.dumps({"type": "ping", "nonce": "n"}))
        assert json.loads(new.recv())["type"] == "pong"
    finally:
        new.close()


def test_host_error_messages_are_logged_escaped_and_capped(server, alice, caplog):
    ws, host_id = _raw(server, alice.token)
    forged = "oops\nERROR cloud.web.app forged line" + "x" * 100_000
    with caplog.at_level(logging.WARNING, logger="cloud.gate.host_socket"):
        ws.send(json.dumps({"type": "error", "message": forged}))
        ws.send(json.dumps({"type": "ping"}))
        json.loads(ws.recv())
        wait_until(lambda: any("reported" in r.getMessage() for r in caplog.records))
    ws.close()
    (record,) = [r for r in caplog.records if "reported" in r.getMessage()]
    line = record.getMessage()
    assert "\n" not in line and "\\n" in line and len(line) < 1000 and "(100,036 characters)" in line


def test_a_host_cannot_say_who_decided(server, alice, scripts_dir):
    host = TestHost(server.ws_url, alice.token).start()
    try:
        spec = write_script(scripts_dir / "d.json", [automate("doc.add('Door', 'D9')"), say("ok")])
        session_id = alice.new_session(host.host_id, spec)
        assert alice.call("PUT", f"/api/sessions/{session_id}/policy", json={"policy": "ask"}).status_code == 200

        def on_frame(frame):
            meta = (frame.chunk or {}).get("metadata") or {}
            if meta.get("kind") == "approval_request":
                request_id = next(m["request_id"] for m in host.received if m["type"] == "execute")

                def decide():
                    host.decided_here[request_id] = "keep"
                    host.send({"type": "decided", "request_id": request_id, "decision": "keep",
                               "by": "alice in the chat page (admin)"})
                threading.Thread(target=decide).start()

        stream = alice.run(session_id, "add a door", on_frame=on_frame)
        decision = stream.of("Metadata", "tool_result")[0]["metadata"]["decision"]
        assert decision["by"] == "the person in the host"
    finally:
        host.stop()


def test_the_system_prompt_never_describes_another_users_host(server, alice, scripts_dir,
                                                              scripted_requests):
    ws, alices_host = _raw(server, alice.token, title="Alice's private tower")
    try:
        bob = Client(server.url, server.token("bob"))
        session_id = bob.new_session(None, write_script(scripts_dir / "p.json", [say("hello")]))
        server.state.store.update_session(session_id, host_id=alices_host)  # a row pointing at a foreign host
        assert bob.run(session_id, "hi").last["type"] == "Complete"
        systems = [request.system for request in scripted_requests]
        assert systems and not any("Alice's private tower" in s for s in systems)
        own = alice.new_session(alices_host, write_script(scripts_dir / "q.json", [say("hello")]))
        alice.run(own, "hi")
        assert "Alice's private tower" in scripted_requests[-1].system  # the owner's own runs do describe it
    finally:
        ws.close()


def test_a_host_behind_a_tls_proxy_sending_its_https_origin_is_let_in(server, alice):
    host_port = server.url.split("://", 1)[1]
    ws = websocket.create_connection(server.ws_url, header=[f"Authorization: Bearer {alice.token}"], timeout=10,
                                     origin=f"https://{host_port}")
    ws.send(json.dumps(HELLO))
    assert json.loads(ws.recv())["type"] == "welcome"
    ws.close()
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        websocket.create_connection(server.ws_url, header=[f"Authorization: Bearer {alice.token}",
                                                           "Sec-Fetch-Site: same-site"], origin=server.url, timeout=10)
    assert refused.value.status_code == 403


def test_a_host_id_the_server_never_issued_is_replaced(server, alice):
    for wanted in ("evil\nid", "h_" + "a" * 5000, "alice-laptop"):
        ws, given = _raw(server, alice.token, host_id=wanted)
        ws.close()
        assert given != wanted and given.startswith("h_") and len(given) == 14
        assert server.state.store.host_owner(wanted) is None
