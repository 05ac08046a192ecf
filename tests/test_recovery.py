"""Issue 13 M5: runs a dead process left `running` are ended at start, every dangling tool call answered."""
from __future__ import annotations

import os
import socket
import subprocess
import sys

from cloud.assembly import recover_interrupted_runs
from cloud.process_owner import this_process
from cloud.session import SessionState
from cloud.store import Store
from tests.support.client import Client, write_script
from tests.support.server import running_server
from tests.support.spine import assert_transcript_valid, collect, say, session, tool_result_texts
from tests.support.test_host import TestHost
from tests.support.waiting import wait_until


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _interrupted(store: Store, owner: str | None, user: str = "alice", host_id: str | None = None,
                 automation: bool = False) -> str:
    """A session as a killed server leaves it: running, its last assistant turn's calls unanswered."""
    session_id = store.create_session(user, host_id, "scripted:x", {})
    last_call = ({"type": "tool_call", "id": "call_b", "name": "execute_task_automation",
                  "input": {"code": "doc.add('Wall', 'Held')"}} if automation
                 else {"type": "tool_call", "id": "call_b", "name": "capture_view", "input": {}})
    store.append_entries(session_id, [
        {"role": "user", "content": [{"type": "text", "text": "count the doors"}]},
        {"role": "assistant", "model": "scripted:x", "content": [
            {"type": "text", "text": "Counting."},
            {"type": "tool_call", "id": "call_a", "name": "execute_data_collection", "input": {"code": "print(1)"}},
            last_call]},
    ])
    store.update_session(session_id, status="running",
                         state={**SessionState().to_json(), "run_owner": owner})
    return session_id


def test_a_run_whose_process_died_is_ended_with_every_call_answered_and_the_session_works_again(tmp_path,
                                                                                             scripts_dir):
    db = tmp_path / "nexus.db"
    store = Store(db)
    dead = _interrupted(store, f"{socket.gethostname()}:{_dead_pid()}")
    with running_server(tmp_path, db_path=db, keepalive_s=0.2) as server:  # the app recovers as it starts
        alice = Client(server.url, server.token("alice"))
        body = session(alice, dead)
        assert body["status"] == "error" and body["running"] is False
        assert_transcript_valid(body["messages"])
        texts = tool_result_texts(body["messages"])
        assert len(texts) == 2 and all("server restarted during this call" in t for t in texts)
        host = TestHost(server.ws_url, alice.token).start()
        try:
            spec = write_script(scripts_dir / "after.json", [collect("print(2)"), say("Two.")])
            server.state.store.update_session(dead, host_id=host.host_id, model=spec)
            assert alice.run(dead, "again").last == {"type": "Complete", "content": "Two."}
        finally:
            host.stop()
        assert_transcript_valid(session(alice, dead)["messages"])


def test_runs_of_live_processes_and_other_machines_are_left_alone(tmp_path):
    store = Store(tmp_path / "nexus.db")
    mine = _interrupted(store, this_process())
    elsewhere = _interrupted(store, "another-machine:1")
    legacy = _interrupted(store, None)
    assert recover_interrupted_runs(store) == [legacy]
    assert store.get_session(mine)["status"] == "running" and len(store.transcript(mine)) == 2
    assert store.get_session(elsewhere)["status"] == "running"
    assert recover_interrupted_runs(store) == []  # idempotent: nothing is answered twice
    assert [e["role"] for e in store.transcript(legacy)] == ["user", "assistant", "tool"]
    assert os.getpid() == int(this_process().split(":")[1])


def test_a_change_the_dead_server_left_held_is_discarded_when_its_host_reconnects(tmp_path):
    import copy

    db = tmp_path / "nexus.db"
    store = Store(db)
    store.claim_host("h_held", "alice")
    dead = _interrupted(store, f"{socket.gethostname()}:{_dead_pid()}", host_id="h_held", automation=True)
    with running_server(tmp_path, db_path=db, keepalive_s=0.2) as server:
        alice = Client(server.url, server.token("alice"))
        host = TestHost(server.ws_url, alice.token, host_id="h_held")
        before = dict(host.document.elements)
        held = copy.deepcopy(host.document)
        held.add("Wall", "Held")
        host.held["call_b.run"] = (held, {"type": "execute_result", "request_id": "call_b.run", "ok": True,
                                          "committed": False, "held": True, "stdout": "", "failures": [],
                                          "changes": {"added": [], "modified": [], "deleted": []},
                                          "duration_ms": 1})
        host.start()
        try:
            wait_until(lambda: any(m["type"] == "decide" for m in host.received), timeout=10)
            (decide,) = [m for m in host.received if m["type"] == "decide"]
            assert decide == {"type": "decide", "request_id": "call_b.run", "decision": "discard"}
            wait_until(lambda: host.held == {})
            assert host.document.elements == before
        finally:
            host.stop()
        texts = tool_result_texts(session(alice, dead)["messages"])
        assert "server restarted during this call" in texts[-1] and "discarded a held change" in texts[-1]
