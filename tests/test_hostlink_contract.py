"""Every host link hands a run only replies that fit the host protocol, as the host socket does for a runtime:
the in-process link too, so tools can parse a reply into its dataclass (shared_contract/host_messages.py)."""
from __future__ import annotations

import threading
from typing import Any

from cloud.hostlink import InProcessHostLink
from shared_contract.host_messages import ExecuteCommand, ExecuteResult

HELLO = {"type": "hello", "host_app": "test", "host_version": "1", "runtime_version": "1", "python_version": "3.11",
         "document": {"title": "T"}}


class AnsweringHost:
    def __init__(self, reply: dict[str, Any]) -> None:
        self.hello, self.reply = HELLO, reply

    def handle(self, command: dict[str, Any]) -> dict[str, Any]:
        return {**self.reply, "request_id": command["request_id"]}


def _ask(reply: dict[str, Any]) -> dict[str, Any] | None:
    link = InProcessHostLink(AnsweringHost(reply), "alice")
    command = ExecuteCommand("c1.run", "collect", "print(1)", 30).to_dict()
    return link.ask(command, 30, threading.Event(), about="c1").message


def test_a_reply_that_fits_the_contract_is_handed_on_and_parses():
    good = {"type": "execute_result", "ok": True, "committed": False, "stdout": "1\n", "failures": [],
            "changes": {"added": [], "modified": [], "deleted": []}, "duration_ms": 3}
    message = _ask(good)
    assert message == {**good, "request_id": "c1.run"}
    assert ExecuteResult.from_dict(message).stdout == "1\n"


def test_a_reply_that_does_not_fit_becomes_an_error_naming_the_field():
    bad = {"type": "execute_result", "ok": True, "committed": False, "stdout": "1\n", "failures": [],
           "changes": {"added": [], "modified": []}, "duration_ms": 3}
    message = _ask(bad)
    assert message is not None and message["type"] == "error" and message["request_id"] == "c1.run"
    assert "changes: 'deleted' is a required property" in message["message"]
