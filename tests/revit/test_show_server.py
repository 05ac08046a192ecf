"""Show in Revit through the orchestrator (issue 28, item 3): POST /api/sessions/{id}/show-elements reaches the
session's own Revit (fake Revit, real server, real websocket), only for its owner; hosts that cannot show
elements are refused by name; a held change stays held (and isolated) while the person looks, and its isolation
is reset on Keep and on Discard."""
from __future__ import annotations

import pytest

from tests.revit.fake_revit import db as DB
from tests.revit.harness import start_revit_host
from tests.revit.test_review_server import FAST_REVIEW, approve, held_wall
from tests.support.client import Client, write_script
from tests.support.server import running_server
from tests.support.spine import say
from tests.support.test_host import TestHost


@pytest.fixture
def stack(tmp_path, scripts_dir):
    """(server, alice's client, alice's fake Revit on it)."""
    with running_server(tmp_path, keepalive_s=0.2, tool_timeout_s=15.0, approval_timeout_s=30.0,
                        script_timeout_s=10.0) as server:
        client = Client(server.url, server.token("alice"))
        host = start_revit_host(server.url, client.token, **FAST_REVIEW)
        try:
            yield server, client, host
        finally:
            host.stop()


def door_ids(host) -> list[int]:
    return sorted(e.Id.Value for e in host.session.doc._elements.values() if isinstance(e, DB.FamilyInstance))


def selected(host) -> list[int]:
    return [i.Value for i in host.session.uidoc.Selection.GetElementIds()]


def show(client: Client, session_id: str, body) -> tuple[int, dict]:
    response = client.call("POST", f"/api/sessions/{session_id}/show-elements", json=body)
    return response.status_code, response.json()


def test_show_in_revit_selects_in_the_session_s_own_revit_and_nobody_else_can(stack, scripts_dir):
    server, client, host = stack
    session_id = client.new_session(host.host_id, write_script(scripts_dir / "s.json", [say("hi")]))
    first = door_ids(host)[0]
    status, body = show(client, session_id, {"element_ids": [first, 99999999]})
    assert status == 200, body
    assert body["ok"] and body["shown"] == [first] and body["missing"] == [99999999] and body["zoomed"]
    assert selected(host) == [first] and body["document"] == host.session.doc.Title

    status, body = show(client, session_id, {"element_ids": ["door"]})
    assert status == 400 and "element_ids/0" in body["error"]
    status, body = show(client, session_id, {"element_ids": [], "extra": 1})
    assert status == 400 and "extra" in body["error"]
    assert selected(host) == [first]


def test_another_user_cannot_drive_alice_s_revit(stack, scripts_dir):
    server, client, host = stack
    session_id = client.new_session(host.host_id, write_script(scripts_dir / "s.json", [say("hi")]))
    bob = Client(server.url, server.token("bob"))
    status, body = show(bob, session_id, {"element_ids": door_ids(host)[:1]})
    assert status == 404 and session_id in body["error"]
    response = bob.call("POST", "/api/sessions", json={"host_id": host.host_id})
    assert response.status_code == 404  # nor can bob bind her host to a session of his
    assert selected(host) == []


def test_a_host_that_cannot_show_elements_is_refused_by_name(stack, scripts_dir):
    server, client, _revit = stack
    other = TestHost(server.ws_url, client.token).start()
    try:
        session_id = client.new_session(other.host_id, write_script(scripts_dir / "s.json", [say("hi")]))
        status, body = show(client, session_id, {"element_ids": [1]})
        assert status == 409 and "cannot show elements" in body["error"]
        no_host = client.new_session(None, write_script(scripts_dir / "t.json", [say("hi")]))
        status, body = show(client, no_host, {"element_ids": [1]})
        assert status == 409 and body["error"] == "this conversation has no host"
    finally:
        other.stop()


@pytest.mark.parametrize("decision", ["keep", "discard"])
def test_while_a_change_is_held_show_in_revit_works_and_the_isolation_ends_with_the_decision(
        stack, scripts_dir, decision):
    _server, client, host = stack
    session_id, run, meta = held_wall(client, host, scripts_dir)
    new_wall = meta["changes"]["added"][0]
    view = host.session.active_view
    assert view._isolated == frozenset({new_wall})  # under ask: the held change isolated in the active view
    status, body = show(client, session_id, {"element_ids": [new_wall]})
    assert status == 200 and body["ok"] and body["shown"] == [new_wall], body
    assert selected(host) == [new_wall] and host.runtime.services.holds.waiting()
    approve(client, session_id, meta["tool_call_id"], decision)
    run.join()
    assert view._isolated is None and not host.runtime.services.holds.waiting()
