"""The host websocket: hello/welcome, malformed messages answered with `error`, routing across reconnects."""
from __future__ import annotations

import json
import sys

import pytest
import websocket

from cloud import hostlink
from tests.support.client import write_script
from tests.support.spine import collect, received_execute, run_to_tool_call, say
from tests.support.test_host import TestHost
from tests.support.waiting import wait_until

HELLO = {"type": "hello", "host_app": "test", "host_version": "t", "runtime_version": "1",
         "python_version": sys.version.split()[0], "document": {"title": "Raw"}}


class RawHost:
    """A bare websocket speaking the host protocol by hand."""

    def __init__(self, server, token: str):
        self.ws = websocket.create_connection(server.ws_url, header=[f"Authorization: Bearer {token}"], timeout=10)

    def send(self, message) -> None:
        self.ws.send(message if isinstance(message, str | bytes) else json.dumps(message))

    def ask(self, message) -> dict:
        self.send(message)
        return json.loads(self.ws.recv())

    def close(self) -> None:
        self.ws.close()


@pytest.fixture
def raw(server, alice):
    host = RawHost(server, alice.token)
    yield host
    host.close()


def test_hello_gets_a_welcome_and_the_host_is_listed_with_its_details(server, alice, raw):
    welcome = raw.ask({**HELLO, "document": {"title": "Tower A", "path": "/x.ifc"}})
    assert welcome["type"] == "welcome" and welcome["host_id"].startswith("h_")
    (listed,) = alice.call("GET", "/api/hosts").json()["hosts"]
    assert listed["host_id"] == welcome["host_id"] and listed["host_app"] == "test"
    assert listed["document"] == {"title": "Tower A", "path": "/x.ifc"}
    assert listed["python_version"] == HELLO["python_version"]


MALFORMED = [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('"hello"', "expected a JSON object"),
    (json.dumps({"type": "teleport"}), "unknown message type 'teleport'"),
    (json.dumps({"no_type": 1}), "unknown message type None"),
    (json.dumps({"type": "execute_result", "request_id": "r1", "ok": "yes"}), "ok"),
    (json.dumps({"type": "ping", "nonce": 5}), "nonce"),
    (json.dumps({"type": "execute", "request_id": "r2", "mode": "collect", "code": "x", "timeout_s": 1}),
     "not a message a host sends"),
    (json.dumps({"type": "welcome", "host_id": "h_x"}), "not a message a host sends"),
]


def test_malformed_messages_get_an_error_reply_and_the_connection_stays_up(raw):
    assert raw.ask(HELLO)["type"] == "welcome"
    for bad, named in MALFORMED:
        reply = raw.ask(bad)
        assert reply["type"] == "error", bad
        assert named in reply["message"], (bad, reply["message"])
    field_error = raw.ask(json.dumps({"type": "execute_result", "request_id": "r1", "ok": "yes"}))
    assert field_error["request_id"] == "r1"  # the reply names the request it refuses
    assert raw.ask({"type": "ping", "nonce": "n1"}) == {"type": "pong", "nonce": "n1"}


def test_messages_before_hello_are_refused_until_a_valid_hello(raw):
    assert raw.ask({"type": "ping"})["message"] == "expected hello first, got ping"
    missing = raw.ask({**HELLO, "document": {}})
    assert missing["type"] == "error" and "document" in missing["message"] and "title" in missing["message"]
    wrong_app = raw.ask({**HELLO, "host_app": "archicad"})
    assert wrong_app["type"] == "error" and "host_app" in wrong_app["message"]
    assert raw.ask(HELLO)["type"] == "welcome"


def test_a_disconnected_host_leaves_the_list(server, alice):
    host = TestHost(server.ws_url, alice.token).start()
    assert len(alice.call("GET", "/api/hosts").json()["hosts"]) == 1
    host.stop()
    wait_until(lambda: not alice.call("GET", "/api/hosts").json()["hosts"])


def test_a_host_that_reconnects_with_its_id_still_receives_its_pending_result(server, alice, scripts_dir,
                                                                           monkeypatch):
    # The grace counts from the server seeing the first socket close; a slow close of the test host's own side
    # (seconds on a loaded machine) must not use it up before the second host has even started.
    monkeypatch.setattr(hostlink, "RECONNECT_GRACE_S", 30.0)
    first = TestHost(server.ws_url, alice.token, silent=True).start()
    spec = write_script(scripts_dir / "reconnect.json", [collect("print(len(doc.by_class('Door')))"),
                                                        say("Answered after a reconnect.")])
    session_id, run, _ = run_to_tool_call(alice, first.host_id, spec)
    execute = received_execute(first)
    first.stop()

    second = TestHost(server.ws_url, alice.token, host_id=first.host_id).start()
    try:
        assert second.host_id == first.host_id
        second.send(second.execute(execute))  # the job finished while the socket was down
        stream = run.join(10)
    finally:
        second.stop()
    assert stream.last == {"type": "Complete", "content": "Answered after a reconnect."}
    assert stream.of("Metadata", "tool_result")[0]["metadata"]["stdout"] == "6\n"


def test_an_error_message_from_the_host_ends_the_pending_call_with_its_message(server, alice, scripts_dir):
    host = TestHost(server.ws_url, alice.token, silent=True).start()
    try:
        spec = write_script(scripts_dir / "refuse.json", [collect("print(1)"), say("The host was busy.")])
        session_id, run, _ = run_to_tool_call(alice, host.host_id, spec)
        execute = received_execute(host)
        host.send({"type": "error", "request_id": execute["request_id"], "message": "busy: a dialog is open"})
        stream = run.join(10)
    finally:
        host.stop()
    (result,) = stream.of("Metadata", "tool_result")
    assert result["metadata"]["ok"] is False and "busy: a dialog is open" in result["content"]
    assert stream.last["content"] == "The host was busy."
