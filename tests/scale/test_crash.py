"""Issue 14 item 4, on one PostgreSQL and one Redis: `kill -9` of the instance driving a run while the host
executes, and Redis restarted mid-run. The other instance ends the run cleanly (every tool call answered), nothing committed is lost,
no session stays `running`. Also a whole run driven by B in its own process, its decision posted to A."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FAST
from tests.scale.servers import free_port, wait_port
from tests.support.client import Client, write_script
from tests.support.server import RunningServer, running_server
from tests.support.spine import (
    BackgroundRun,
    assert_transcript_valid,
    automate,
    collect,
    say,
    session,
    wait_until,
)
from tests.support.test_host import TestHost

LEASE_S = 2.0
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def instance_a(tmp_path, scripts_dir, redis, database_url, monkeypatch) -> Iterator[RunningServer]:
    monkeypatch.setenv("NEXUS_REDIS_URL", redis.url)
    monkeypatch.setenv("NEXUS_RUN_LEASE_S", str(LEASE_S))
    with running_server(tmp_path, db_path=database_url, **FAST) as a:
        yield a


@pytest.fixture
def instance_b(instance_a, database_url) -> Iterator[tuple[str, subprocess.Popen]]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "tests.scale.instance", database_url, str(port)],
                               cwd=ROOT, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, process, "instance B")
        yield f"http://127.0.0.1:{port}", process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)


def test_kill_9_of_the_driving_instance_while_the_host_executes(instance_a, instance_b, scripts_dir):
    a = instance_a
    b_url, b_process = instance_b
    token = a.token("alice")
    host = TestHost(a.ws_url, token, delay_s=1.5).start()
    try:
        on_a, on_b = Client(a.url, token), Client(b_url, token)
        spec = write_script(scripts_dir / "crash.json", [automate("doc.add('Wall', 'Committed wall')"), say("done")])
        session_id = on_b.new_session(host.host_id, spec)
        BackgroundRun(on_b, session_id, "add a wall")
        wait_until(lambda: any(m["type"] == "execute" for m in host.received), timeout=15)
        os.kill(b_process.pid, signal.SIGKILL)  # the host is executing; its answer will reach A only
        b_process.wait(10)
        # A's sweep finds B's lease expired and ends the run; no session stays running.
        wait_until(lambda: session(on_a, session_id)["status"] != "running", timeout=LEASE_S * 6 + 10)
        body = session(on_a, session_id)
        assert body["status"] == "error" and body["running"] is False
        assert_transcript_valid(body["messages"])  # the dangling call is answered
        assert "server restarted" in str(body["messages"][-1]).lower()
        # The change was held open by the host for the dead instance's decision: the document is as it was,
        # and the host, still connected to the surviving instance, is told to discard it at once (not left
        # holding it until its own hold timeout or its next reconnect).
        assert not [e for e in host.document.elements.values() if e["name"] == "Committed wall"]
        wait_until(lambda: any(m["type"] == "decide" and m["decision"] == "discard" for m in host.received),
                   timeout=10)
        # A page reattaching through A sees the run's chunks and a clear end.
        replay = on_a.call("GET", f"/api/sessions/{session_id}/stream?after=0")
        assert replay.status_code == 200 and "event: ToolCall" in replay.text
        assert replay.text.rstrip().splitlines()[-1].startswith("data: ") and "event: Error" in replay.text
        assert on_a.call("GET", "/api/runs").json() == {"runs": []}
    finally:
        host.stop()


def test_kill_9_with_a_real_ifc_host_leaves_the_file_unchanged_and_the_host_free(instance_a, instance_b, scripts_dir,
                                                                                tmp_path):
    """The same crash on a real IFC host (its own process, on a real file): the held change is discarded,
    the file is byte-identical, and the host takes the next run at once instead of holding the change."""
    from cloud.child_host import start_ifc_host
    from ifc_host.sample import write_sample_model

    a = instance_a
    b_url, b_process = instance_b
    model, out = tmp_path / "crash.ifc", tmp_path / "crash-out.ifc"
    write_sample_model(str(model), storeys=1)
    before = model.read_bytes()
    token = a.token("alice")
    ifc = start_ifc_host(str(model), a.url, a.state.store.create_token("alice", scope="host"), str(out))
    try:
        host_id = a.wait_for_host("alice", timeout=60)
        on_a, on_b = Client(a.url, token), Client(b_url, token)
        spec = write_script(scripts_dir / "ifc-crash.json", [
            automate("import time\ntime.sleep(2)\nmodel.by_type('IfcDoor')[0].Name = 'Crash door'"), say("done")])
        session_id = on_b.new_session(host_id, spec)
        run = BackgroundRun(on_b, session_id, "rename a door")
        run.wait_for("ToolCall")
        time.sleep(0.5)  # the script is running in the host
        os.kill(b_process.pid, signal.SIGKILL)
        b_process.wait(10)
        wait_until(lambda: session(on_a, session_id)["status"] != "running", timeout=LEASE_S * 6 + 10)
        assert_transcript_valid(session(on_a, session_id)["messages"])
        count = write_script(scripts_dir / "ifc-after.json", [collect("print(len(model.by_type('IfcDoor')))"),
                                                              say("counted")])
        after = on_a.run(on_a.new_session(host_id, count), "count the doors")
        assert after.last == {"type": "Complete", "content": "counted"}
        (result,) = after.of("Metadata", "tool_result")
        assert result["metadata"]["ok"] is True, result
        assert model.read_bytes() == before
        assert not out.exists() or out.read_bytes() == before
    finally:
        ifc.stop()


def test_a_run_driven_by_an_instance_in_another_process_completes_with_its_approval_posted_to_a(
        instance_a, instance_b, scripts_dir):
    """Not only two instances in one process: B is its own process; the host, the tool result and the
    person's decision go through A."""
    a = instance_a
    b_url, _ = instance_b
    token = a.token("alice")
    host = TestHost(a.ws_url, token).start()
    try:
        on_a, on_b = Client(a.url, token), Client(b_url, token)
        spec = write_script(scripts_dir / "apart.json", [automate("doc.add('Wall', 'Kept wall')"), say("Kept.")])
        session_id = on_b.new_session(host.host_id, spec)
        assert on_b.call("PUT", f"/api/sessions/{session_id}/policy", json={"policy": "ask"}).status_code == 200
        run = BackgroundRun(on_b, session_id, "add a wall")
        call_id = run.wait_for("ToolCall")["metadata"]["tool_call_id"]
        wait_until(lambda: any(r["awaiting_decision"] for r in on_a.call("GET", "/api/runs").json()["runs"]),
                   timeout=15)
        answer = on_a.call("POST", f"/api/sessions/{session_id}/approval",
                           json={"tool_call_id": call_id, "decision": "keep"})
        assert answer.status_code == 202
        assert run.join(30).last == {"type": "Complete", "content": "Kept."}
        assert "Kept wall" in [e["name"] for e in host.document.elements.values()]
        body = session(on_a, session_id)
        assert body["status"] == "idle"
        assert_transcript_valid(body["messages"])
    finally:
        host.stop()


def test_redis_restarted_mid_run_the_run_waits_and_recovers(instance_a, redis, scripts_dir):
    a = instance_a
    token = a.token("alice")
    host = TestHost(a.ws_url, token, delay_s=2.5).start()
    try:
        alice = Client(a.url, token)
        spec = write_script(scripts_dir / "redis.json", [collect("print(len(doc.by_class('Wall')))"),
                                                         say("Counted the walls.")])
        session_id = alice.new_session(host.host_id, spec)
        run = BackgroundRun(alice, session_id, "count the walls")
        wait_until(lambda: any(m["type"] == "execute" for m in host.received), timeout=15)
        redis.stop()  # everything Redis held is gone (no persistence)
        time.sleep(0.3)
        redis.start()
        stream = run.join(40)
        assert stream.last == {"type": "Complete", "content": "Counted the walls."}
        (result,) = stream.of("Metadata", "tool_result")
        assert result["metadata"]["ok"] is True
        body = session(alice, session_id)
        assert body["status"] == "idle"
        assert_transcript_valid(body["messages"])
    finally:
        host.stop()
