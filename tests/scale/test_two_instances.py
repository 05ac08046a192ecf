"""Issue 14 item 3: two server instances on one PostgreSQL and one Redis, over real sockets.

A host connects to instance A; the session is created, driven and followed through instance B; the
tool result comes back on A's websocket; the person's decision and a cancel are posted to A.
"""
from __future__ import annotations

from tests.conftest import FAST
from tests.scale.pair import held_under_ask, host_on_a
from tests.support.client import Client, write_script
from tests.support.server import running_server
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


def test_host_on_a_session_driven_and_followed_on_b_the_run_completes(instances, scripts_dir):
    a, b = instances
    with host_on_a(a, b) as pair:
        host, on_a, on_b = pair.host, pair.on_a, pair.on_b
        # B sees the host A holds, and only for its user.
        assert [h["host_id"] for h in on_b.call("GET", "/api/hosts").json()["hosts"]] == [host.host_id]
        assert Client(b.url, b.token("bob")).call("GET", "/api/hosts").json()["hosts"] == []
        spec = write_script(scripts_dir / "two.json", [collect("print(len(doc.by_class('Door')))"),
                                                       say("There are 6 doors.")])
        session_id = on_b.new_session(host.host_id, spec)
        stream = on_b.run(session_id, "count the doors")
        assert stream.last == {"type": "Complete", "content": "There are 6 doors."}
        (result,) = stream.of("Metadata", "tool_result")
        assert result["metadata"]["ok"] is True and result["content"].endswith("6")
        body = session(on_a, session_id)  # the same session read through the other instance
        assert body["status"] == "idle"
        assert_transcript_valid(body["messages"])
        # A reattach through A replays the whole run B drove.
        replay = on_a.call("GET", f"/api/sessions/{session_id}/stream?after=0")
        assert replay.status_code == 200 and replay.text.count("event: ") == len(stream.chunks)


def test_an_approval_posted_to_a_reaches_the_run_driven_on_b_and_a_cancel_too(instances, scripts_dir):
    with host_on_a(*instances) as pair:
        host, on_a, on_b = pair.host, pair.on_a, pair.on_b
        spec = write_script(scripts_dir / "ask.json", [automate("doc.add('Wall', 'New wall')"), say("Kept.")])
        session_id, run, call_id = held_under_ask(pair, spec, "add a wall")
        (listed,) = on_a.call("GET", "/api/runs").json()["runs"]
        assert listed["session_id"] == session_id
        answer = on_a.call("POST", f"/api/sessions/{session_id}/approval",
                           json={"tool_call_id": call_id, "decision": "keep"})
        assert answer.status_code == 202
        again = on_a.call("POST", f"/api/sessions/{session_id}/approval",
                          json={"tool_call_id": call_id, "decision": "discard"})
        assert again.status_code == 409  # applied exactly once, whichever instance it reaches
        stream = run.join(30)
        assert stream.last == {"type": "Complete", "content": "Kept."}
        assert "New wall" in [e["name"] for e in host.document.elements.values()]

        # A cancel posted to A stops a run B drives, whose host never answers.
        host.silent = True
        spec = write_script(scripts_dir / "slow.json", [collect("print(1)"), say("never")])
        second = BackgroundRun(on_b, session_id, "again", model=spec)
        second.wait_for("ToolCall")
        assert on_a.call("POST", f"/api/sessions/{session_id}/cancel").status_code == 202
        second.join(20)
        wait_until(lambda: session(on_a, session_id)["status"] == "cancelled", timeout=10)
        assert_transcript_valid(session(on_a, session_id)["messages"])


def test_a_host_that_reconnects_to_the_other_instance_has_its_stale_socket_closed(instances, scripts_dir):
    a, b = instances
    token = a.token("alice")
    first = TestHost(a.ws_url, token).start()
    stale = a.state.hosts.get_local(first.host_id)
    second = None
    try:
        # The same runtime comes back through B while A still holds its old, half-dead socket.
        second = TestHost(b.ws_url, token, host_id=first.host_id).start()
        assert second.host_id == first.host_id
        wait_until(lambda: not first._thread.is_alive(), timeout=10)  # A closed the stale socket
        assert a.state.hosts.get_local(first.host_id) is None
        assert b.state.hosts.get_local(first.host_id) is not None
        a.state.hosts._advertise([stale])  # a heartbeat of A's holding the old connection claims nothing back
        owner = a.state.hosts.bus.redis.get(f"nx:host:{first.host_id}:owner")
        assert owner == b.state.hosts.bus.process
        # A run driven on A reaches the host through B's socket.
        on_a = Client(a.url, token)
        spec = write_script(scripts_dir / "back.json", [collect("print(len(doc.by_class('Wall')))"), say("One.")])
        stream = on_a.run(on_a.new_session(first.host_id, spec), "count walls")
        assert stream.last == {"type": "Complete", "content": "One."}
        assert any(m.get("type") == "execute" for m in second.received)
        assert not any(m.get("type") == "execute" for m in first.received)
    finally:
        first.stop()
        if second is not None:
            second.stop()


def test_closing_an_instance_stops_its_redis_bus(tmp_path, redis, database_url, monkeypatch):
    """A server shutting down (runs.close()) lets go of Redis: its subscriber thread ends and its
    connections close, so a stopped Redis afterwards is not retried forever by a process that is done."""
    import redis as redis_client

    monkeypatch.setenv("NEXUS_REDIS_URL", redis.url)
    admin = redis_client.Redis.from_url(redis.url, decode_responses=True)
    with running_server(tmp_path, db_path=database_url, **FAST) as a:
        bus = a.state.runs.bus
        inbox = bus.inbox
        assert admin.pubsub_numsub(inbox) == [(inbox, 1)]
        a.state.runs.close()
        assert bus.closed.is_set() and not bus._thread.is_alive()
        wait_until(lambda: admin.pubsub_numsub(inbox) == [(inbox, 0)], timeout=10)
    admin.close()
