"""Issue 22, item 1: a cancel is an abort, through the real API on the real IFC host (its keeper and script
processes, both isolations, a real file). The running script is killed and rolled back, a held change is
discarded, the tool result says so, and another session's next call is served at once."""
from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ifc_host import runtime
from ifc_host.keeper_process import ISOLATIONS
from ifc_host.runtime import HostHandle
from ifc_host.sample import write_sample_model
from tests.support.client import Client, write_script
from tests.support.server import RunningServer, running_server
from tests.support.spine import BackgroundRun, automate, collect, say, session, tool_result_texts
from tests.support.waiting import wait_until

SLEEP_THEN_RENAME = ("import time\ntime.sleep(15)\n"
                     "for door in model.by_type('IfcDoor'):\n    door.Name = 'Cancelled rename'\n")
COUNT_DOORS = "print(len(model.by_type('IfcDoor')))"


@dataclass
class Stack:
    server: RunningServer
    host: HostHandle
    host_id: str
    model: Path
    client: Client
    scripts: Path

    def spec(self, name: str, turns: list) -> str:
        return write_script(self.scripts / f"{name}.json", turns)

    def wait_script_running(self) -> None:
        executor = self.host.runtime.executor
        wait_until(lambda: executor._in_flight is not None, timeout=30)
        time.sleep(1.0)  # the keeper has handed it to its process and the script sleeps

    def next_call_is_served(self, cancelled_at: float, name: str) -> float:
        """Another session's collect on the same host succeeds; seconds from the cancel to its result."""
        if self.host.runtime.executor.isolation == "spawn":
            self.host.runtime.executor.wait_warm()  # the used spare is replaced by a new interpreter (seconds)
            cancelled_at = time.monotonic()
        spec = self.spec(name, [collect(COUNT_DOORS), say("counted")])
        stream = self.client.run(self.client.new_session(self.host_id, spec), "count the doors")
        (result,) = stream.of("Metadata", "tool_result")
        assert result["metadata"]["ok"] is True, result["content"]
        assert stream.last == {"type": "Complete", "content": "counted"}
        return time.monotonic() - cancelled_at


@pytest.fixture(params=ISOLATIONS)
def stack(request: pytest.FixtureRequest, tmp_path: Path, scripts_dir: Path) -> Iterator[Stack]:
    model = tmp_path / "model.ifc"
    write_sample_model(model, storeys=1)
    with running_server(tmp_path, keepalive_s=0.2, tool_timeout_s=120, script_timeout_s=60) as server:
        host = runtime.start_host_thread(str(model), server.url, server.token("alice"), isolation=request.param)
        try:
            host_id = host.wait_connected(60)
            host.runtime.executor.wait_warm()
            yield Stack(server, host, host_id, model, Client(server.url, server.token("alice")), Path(scripts_dir))
        finally:
            host.stop()


def _activity(stack: Stack, client: Client | None = None) -> dict:
    (host,) = [h for h in (client or stack.client).call("GET", "/api/hosts").json()["hosts"]
               if h["host_id"] == stack.host_id]
    return host["activity"]


def _ask(stack: Stack, session_id: str) -> None:
    response = stack.client.call("PUT", f"/api/sessions/{session_id}/policy", json={"policy": "ask"})
    assert response.status_code in (200, 204), response.text


def _cancel(stack: Stack, session_id: str) -> float:
    response = stack.client.call("POST", f"/api/sessions/{session_id}/cancel")
    assert response.status_code == 202, response.text
    return time.monotonic()


def test_cancel_during_a_long_automation_kills_it_and_the_next_call_is_served_at_once(stack: Stack):
    before = stack.model.read_bytes()
    session_id = stack.client.new_session(stack.host_id, stack.spec("slow", [automate(SLEEP_THEN_RENAME),
                                                                             say("never said")]))
    run = BackgroundRun(stack.client, session_id, "rename the doors slowly")
    stack.wait_script_running()
    busy = _activity(stack)
    call_id = run.wait_for("ToolCall")["metadata"]["tool_call_id"]
    assert busy["state"] == "busy" and busy["session_id"] == session_id and busy["tool_call_id"] == call_id
    assert busy["since"] <= time.time() <= busy["until"]
    cancelled_at = _cancel(stack, session_id)
    stream = run.join(30)
    assert time.monotonic() - cancelled_at < 2.0, "the cancelled run did not end at once"
    assert _activity(stack) == {"state": "idle", "session_id": None, "tool_call_id": None, "since": None,
                                "until": None}
    assert stream.last["type"] == "Error" and stream.last["metadata"].get("cancelled") is True
    (result,) = stream.of("Metadata", "tool_result")
    assert result["metadata"]["ok"] is False and result["metadata"]["committed"] is False
    assert result["metadata"]["error"]["type"] == "Cancelled"
    assert "cancelled while running: rolled back" in result["content"]
    body = session(stack.client, session_id)
    assert body["status"] == "cancelled"
    assert any("cancelled while running: rolled back" in text for text in tool_result_texts(body["messages"]))
    assert stack.host.runtime.executor.held_request_id is None
    waited = stack.next_call_is_served(cancelled_at, "after-slow")
    assert waited < 2.0, f"the next call was served {waited:.1f} s after the cancel"
    assert stack.model.read_bytes() == before


def test_cancel_during_a_collection_stops_it(stack: Stack):
    session_id = stack.client.new_session(stack.host_id, stack.spec("slow-read", [
        collect("import time\ntime.sleep(30)\nprint('finished reading')"), say("never said")]))
    run = BackgroundRun(stack.client, session_id, "read slowly")
    stack.wait_script_running()
    cancelled_at = _cancel(stack, session_id)
    stream = run.join(30)
    (result,) = stream.of("Metadata", "tool_result")
    assert result["metadata"]["error"]["type"] == "Cancelled"
    assert "finished reading" not in result["metadata"].get("stdout", "")
    waited = stack.next_call_is_served(cancelled_at, "after-read")
    assert waited < 2.0, f"the next call was served {waited:.1f} s after the cancel"


def test_cancel_while_a_change_awaits_approval_discards_it(stack: Stack):
    before = stack.model.read_bytes()
    session_id = stack.client.new_session(stack.host_id, stack.spec("held", [
        automate("for door in model.by_type('IfcDoor'):\n    door.Name = 'Held rename'"), say("never said")]))
    _ask(stack, session_id)
    run = BackgroundRun(stack.client, session_id, "rename the doors")
    request = _wait_approval(run)
    held = _activity(stack)
    assert held["state"] == "held" and held["session_id"] == session_id
    assert held["tool_call_id"] == request["metadata"]["tool_call_id"] and held["until"] > time.time()
    cancelled_at = _cancel(stack, session_id)
    run.join(30)
    wait_until(lambda: stack.host.runtime.executor.held_request_id is None, timeout=5)
    assert _activity(stack)["state"] == "idle"
    waited = stack.next_call_is_served(cancelled_at, "after-held")
    assert waited < 2.0, f"the next call was served {waited:.1f} s after the cancel"
    assert stack.model.read_bytes() == before


def _wait_approval(run: BackgroundRun) -> dict:
    deadline = time.monotonic() + 60
    while True:
        found = [f.chunk for f in list(run.frames) if f.chunk and f.chunk["type"] == "Metadata"
                 and f.chunk["metadata"].get("kind") == "approval_request"]
        if found:
            return found[0]
        assert time.monotonic() < deadline, "no approval request"
        time.sleep(0.05)


def test_the_owner_releases_a_held_change_from_the_host_list(stack: Stack):
    before = stack.model.read_bytes()
    session_id = stack.client.new_session(stack.host_id, stack.spec("release", [
        automate("for door in model.by_type('IfcDoor'):\n    door.Name = 'Released rename'"), say("after")]))
    _ask(stack, session_id)
    assert stack.client.call("POST", f"/api/hosts/{stack.host_id}/release").status_code == 409  # idle
    run = BackgroundRun(stack.client, session_id, "rename the doors")
    _wait_approval(run)
    bob = Client(stack.server.url, stack.server.token("bob"))
    assert bob.call("POST", f"/api/hosts/{stack.host_id}/release").status_code == 404  # not bob's host
    assert _activity(stack)["state"] == "held"
    released = stack.client.call("POST", f"/api/hosts/{stack.host_id}/release")
    assert released.status_code == 202, released.text
    assert released.json()["session_id"] == session_id
    stream = run.join(30)
    assert stream.last == {"type": "Complete", "content": "after"}
    (result,) = stream.of("Metadata", "tool_result")
    assert result["metadata"]["committed"] is False
    assert result["metadata"]["decision"]["decision"] == "discard"
    assert result["metadata"]["decision"]["by"] == "alice"
    assert _activity(stack)["state"] == "idle" and stack.host.runtime.executor.held_request_id is None
    assert stack.model.read_bytes() == before
