"""Tokens: admin is the token's, host tokens connect a host and nothing else, revocation ends everything."""
from __future__ import annotations

import subprocess
import sys

import pytest
import requests
import websocket

from tests.support.client import Client
from tests.support.spine import wait_until
from tests.support.test_host import TestHost


def _nexus(*args: str, db) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cloud.cli", *args, "--db", str(db)], capture_output=True,
                          text=True, timeout=60)


def test_token_create_without_admin_is_not_an_admin_token_even_for_an_admin_user(server):
    created = _nexus("token", "create", "root", "--admin", db=server.db_path)
    assert created.returncode == 0, created.stderr
    plain = _nexus("token", "create", "root", db=server.db_path)
    admin_token, plain_token = created.stdout.strip().splitlines()[-1], plain.stdout.strip().splitlines()[-1]
    assert Client(server.url, admin_token).call("GET", "/api/admin/tokens").status_code == 200
    plain_client = Client(server.url, plain_token)
    me = plain_client.call("GET", "/api/me").json()
    assert me["user"] == "root" and me["is_admin"] is False
    assert plain_client.call("GET", "/api/admin/tokens").status_code == 403
    assert plain_client.call("GET", "/admin").status_code == 403


def test_the_admin_api_creates_admin_tokens_without_promoting_the_user_and_can_demote(server):
    admin = Client(server.url, server.token("root", admin=True))
    bobs_old = Client(server.url, server.token("bob"))
    created = admin.call("POST", "/api/admin/tokens", json={"user": "bob", "admin": True})
    assert created.status_code == 201 and created.json()["admin"] is True
    bobs_admin = Client(server.url, created.json()["token"])
    assert bobs_admin.call("GET", "/api/admin/usage").status_code == 200
    assert bobs_old.call("GET", "/api/admin/usage").status_code == 403  # the user was not promoted
    (row,) = [t for t in admin.call("GET", "/api/admin/tokens").json()["tokens"]
              if t["user_name"] == "bob" and t["is_admin"]]
    assert admin.call("PUT", f"/api/admin/tokens/{row['id']}", json={"admin": "no"}).status_code == 400
    assert admin.call("PUT", f"/api/admin/tokens/{row['id']}", json={"admin": False}).status_code == 200
    assert bobs_admin.call("GET", "/api/admin/usage").status_code == 403
    assert bobs_admin.call("GET", "/api/me").json()["is_admin"] is False
    assert admin.call("PUT", "/api/admin/tokens/nope", json={"admin": False}).status_code == 404


def test_the_cli_lists_demotes_and_revokes_tokens(server):
    token = server.token("carol", admin=True)
    carol = Client(server.url, token)
    (line,) = [x for x in _nexus("token", "list", db=server.db_path).stdout.splitlines() if "carol" in x]
    token_id = line.split()[0]
    assert "admin" in line and token not in line
    assert _nexus("token", "demote", token_id, db=server.db_path).returncode == 0
    assert carol.call("GET", "/api/admin/usage").status_code == 403
    assert _nexus("token", "revoke", token_id, db=server.db_path).returncode == 0
    assert carol.call("GET", "/api/me").status_code == 401
    assert _nexus("token", "revoke", token_id, db=server.db_path).returncode != 0


def test_a_host_token_connects_a_host_and_opens_nothing_else(server, alice):
    made = _nexus("token", "create", "alice", "--host", db=server.db_path)
    assert made.returncode == 0 and "host only" in made.stdout
    host_token = made.stdout.strip().splitlines()[-1]
    host = TestHost(server.ws_url, host_token).start()
    try:
        assert [h["host_id"] for h in alice.call("GET", "/api/hosts").json()["hosts"]] == [host.host_id]
        as_host = Client(server.url, host_token)
        for method, path in [("GET", "/api/me"), ("GET", "/api/hosts"), ("POST", "/api/sessions"),
                             ("GET", "/static/js/api.js"), ("GET", "/admin")]:
            response = as_host.call(method, path, json={})
            assert response.status_code in (401, 403), (path, response.status_code)
        signin = requests.post(server.url + "/signin", data={"token": host_token}, allow_redirects=False, timeout=10)
        assert signin.status_code == 403 and "nexus_session" not in signin.cookies
    finally:
        host.stop()
    assert _nexus("token", "create", "alice", "--host", "--admin", db=server.db_path).returncode != 0


def test_revoking_a_token_disconnects_the_hosts_connected_with_it(server):
    admin = Client(server.url, server.token("root", admin=True))
    token = server.token("dave")
    host = TestHost(server.ws_url, token).start()
    host_id = host.host_id
    (row,) = [t for t in admin.call("GET", "/api/admin/tokens").json()["tokens"] if t["user_name"] == "dave"]
    revoked = admin.call("DELETE", f"/api/admin/tokens/{row['id']}")
    assert revoked.status_code == 200 and revoked.json()["hosts_disconnected"] == 1
    wait_until(lambda: server.state.hosts.get(host_id) is None, timeout=10)
    host._thread.join(10)  # the host's receive loop ends: the server closed the socket
    assert not host._thread.is_alive()


def test_a_token_revoked_from_another_process_disconnects_its_hosts(server):
    token = server.token("erin")
    host = TestHost(server.ws_url, token).start()
    (line,) = [x for x in _nexus("token", "list", db=server.db_path).stdout.splitlines() if "erin" in x]
    assert _nexus("token", "revoke", line.split()[0], db=server.db_path).returncode == 0
    wait_until(lambda: server.state.hosts.get(host.host_id) is None, timeout=15)
    with pytest.raises(websocket.WebSocketBadStatusException):
        websocket.create_connection(server.ws_url, header=[f"Authorization: Bearer {token}"], timeout=10)


def test_user_names_are_checked_where_tokens_are_made(server):
    admin = Client(server.url, server.token("root", admin=True))
    for bad in ("bob\nINFO forged", " ", "a b", "x" * 65, "-dash"):
        response = admin.call("POST", "/api/admin/tokens", json={"user": bad})
        assert response.status_code == 400 and "user" in response.json()["error"], bad
    assert admin.call("POST", "/api/admin/tokens", json={"user": "jane.doe@example.com"}).status_code == 201
    refused = _nexus("token", "create", "bob smith", db=server.db_path)
    assert refused.returncode != 0 and "user name" in refused.stderr
