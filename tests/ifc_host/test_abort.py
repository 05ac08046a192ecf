"""`abort` on the real IFC host (runtime, keeper and script processes, both isolations), driven frame by frame
from a bare websocket endpoint: a cancelled run's script is killed at once and rolled back, a held automation
is discarded, and the host serves the next request straight away."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ifc_host.keeper_process import ISOLATIONS
from ifc_host.runtime import HostHandle, ReconnectPolicy, start_host_thread
from tests.conformance.ifc_models import write_small_building
from tests.conformance.raw_cloud import RawCloud, RawHostConnection

SLEEP_THEN_RENAME = ("import time\ntime.sleep(15)\n"
                     "for door in model.by_type('IfcDoor'):\n    door.Tag = 'renamed'\n")
COUNT_DOORS = "print(len(model.by_type('IfcDoor')))\n"


@pytest.fixture(params=ISOLATIONS)
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[RawHostConnection, HostHandle, Path]]:
    cloud = RawCloud().start()
    model = write_small_building(tmp_path / "model.ifc")
    handle = start_host_thread(str(model), cloud.url, "token", isolation=request.param,
                               reconnect=ReconnectPolicy(first_delay_s=0.1, max_delay_s=0.5))
    connection = cloud.accept(timeout=120)
    connection.welcome("h_abort")
    handle.runtime.executor.wait_warm()
    yield connection, handle, model
    handle.stop()
    cloud.stop()


def _execute(connection: RawHostConnection, request_id: str, code: str, mode: str = "automate",
             hold: bool = True) -> None:
    connection.send({"type": "execute", "request_id": request_id, "mode": mode, "code": code, "timeout_s": 60,
                     "hold": hold and mode == "automate"})


def _reply_to(connection: RawHostConnection, request_id: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        message = connection.recv(timeout=max(0.1, deadline - time.monotonic()))
        if message.get("request_id") == request_id:
            return message


def _wait_running(handle: HostHandle, connection: RawHostConnection) -> None:
    """Until the script has had time to start in its process (the keeper forks or hands it to the spare)."""
    deadline = time.monotonic() + 30
    while handle.runtime.executor._in_flight is None:
        assert time.monotonic() < deadline, "the execute never started"
        time.sleep(0.02)
    time.sleep(1.0)


def _serves_next_call_quickly(connection: RawHostConnection, request_id: str, handle: HostHandle) -> None:
    """The next call is served, not refused, within 2 s, under spawn too: a second spare process was kept
    ready behind the one the aborted script used (a new interpreter takes seconds to load the model)."""
    started = time.monotonic()
    _execute(connection, request_id, COUNT_DOORS, mode="collect")
    reply = _reply_to(connection, request_id, timeout=10)
    assert reply["type"] == "execute_result" and reply["ok"], reply
    assert time.monotonic() - started < 2.0, f"the next call took {time.monotonic() - started:.1f} s"


def test_abort_kills_a_running_automation_and_rolls_it_back(host):
    connection, handle, model = host
    before = model.read_bytes()
    _execute(connection, "c1.run", SLEEP_THEN_RENAME)
    _wait_running(handle, connection)
    aborted_at = time.monotonic()
    connection.send({"type": "abort", "request_id": "c1.run"})
    reply = _reply_to(connection, "c1.run", timeout=10)
    assert time.monotonic() - aborted_at < 2.0
    assert reply["type"] == "execute_result" and reply["cancelled"] is True
    assert reply["ok"] is False and reply["committed"] is False and not reply.get("held")
    assert reply["error"]["type"] == "Cancelled"
    assert reply["error"]["message"] == "cancelled while running: rolled back, the model is unchanged"
    assert handle.runtime.executor.held_request_id is None
    _serves_next_call_quickly(connection, "c2.run", handle)
    assert model.read_bytes() == before


def test_abort_stops_a_running_collection(host):
    connection, handle, _ = host
    _execute(connection, "k1.run", "import time\ntime.sleep(30)\nprint('done')\n", mode="collect")
    _wait_running(handle, connection)
    aborted_at = time.monotonic()
    connection.send({"type": "abort", "request_id": "k1.run"})
    reply = _reply_to(connection, "k1.run", timeout=10)
    assert time.monotonic() - aborted_at < 2.0
    assert reply["error"]["type"] == "Cancelled" and reply["cancelled"] is True
    assert "done" not in reply["stdout"]
    _serves_next_call_quickly(connection, "k2.run", handle)


def test_abort_discards_a_held_automation(host):
    connection, handle, model = host
    before = model.read_bytes()
    _execute(connection, "h1.run", "for door in model.by_type('IfcDoor'):\n    door.Tag = 'held'\n")
    held = _reply_to(connection, "h1.run", timeout=60)
    assert held["held"] is True and handle.runtime.executor.held_request_id == "h1.run"
    connection.send({"type": "abort", "request_id": "h1.run"})
    reply = _reply_to(connection, "h1.run", timeout=10)
    assert reply["type"] == "execute_result" and reply["cancelled"] is True and reply["committed"] is False
    assert reply["error"]["message"].startswith("cancelled while awaiting a keep/discard decision: discarded")
    assert handle.runtime.executor.held_request_id is None
    _serves_next_call_quickly(connection, "h2.run", handle)
    assert model.read_bytes() == before


def test_an_abort_for_nothing_running_is_a_harmless_answer(host):
    connection, handle, _ = host
    connection.send({"type": "abort", "request_id": "nothing.run"})
    reply = _reply_to(connection, "nothing.run", timeout=10)
    assert reply == {"type": "aborted", "request_id": "nothing.run", "state": "none",
                     "message": "nothing to abort: request nothing.run is not running or held on this host"}
    _serves_next_call_quickly(connection, "n2.run", handle)


def test_an_abort_right_behind_its_execute_stops_it_before_or_as_it_starts(host):
    connection, handle, model = host
    before = model.read_bytes()
    _execute(connection, "q1.run", SLEEP_THEN_RENAME)
    connection.send({"type": "abort", "request_id": "q1.run"})
    reply = _reply_to(connection, "q1.run", timeout=10)
    assert reply["cancelled"] is True and reply["error"]["type"] == "Cancelled" and reply["committed"] is False
    _serves_next_call_quickly(connection, "q2.run", handle)
    assert model.read_bytes() == before
