"""The capacity-one rendezvous between a suspended tool call and its result, driven over real connections."""
from __future__ import annotations

import threading
import time

import pytest

from cloud.rendezvous import Delivery, ToolResultChannel
from tests.support.client import Client, write_script
from tests.support.server import running_server
from tests.support.spine import (
    BackgroundRun,
    assert_transcript_valid,
    collect,
    received_execute,
    run_to_tool_call,
    say,
    session,
    start_and_hang_up,
    tool_result_texts,
    wait_until,
)
from tests.support.test_host import TestHost


def _result(request_id: str, stdout: str = "relayed\n") -> dict:
    return {"type": "execute_result", "request_id": request_id, "ok": True, "committed": False, "stdout": stdout,
            "failures": [], "changes": {"added": [], "modified": [], "deleted": []}, "duration_ms": 3}


@pytest.fixture
def silent_host(server, alice):
    host = TestHost(server.ws_url, alice.token, silent=True).start()
    yield host
    host.stop()


def _post_result(client: Client, session_id: str, tool_call_id: str, result: dict):
    return client.call("POST", f"/api/sessions/{session_id}/tool-results",
                       json={"tool_call_id": tool_call_id, "result": result})


def test_timeout_tells_the_model_no_result_in_a_normal_tool_result(tmp_path, scripts_dir):
    with running_server(tmp_path, keepalive_s=0.2, tool_timeout_s=0.6) as server:
        alice = Client(server.url, server.token("alice"))
        host = TestHost(server.ws_url, alice.token, silent=True).start()
        spec = write_script(scripts_dir / "t.json", [collect("print(1)"), say("The host did not answer.")])
        session_id = alice.new_session(host.host_id, spec)
        started = time.monotonic()
        stream = alice.run(session_id, "go")
        assert 0.5 < time.monotonic() - started < 5
        assert stream.last == {"type": "Complete", "content": "The host did not answer."}
        (person,) = stream.of("Metadata", "tool_result")
        assert person["metadata"]["ok"] is False and "No result came back" in person["content"]
        messages = session(alice, session_id)["messages"]
        assert_transcript_valid(messages)
        (text,) = tool_result_texts(messages)
        assert "No result came back from the host" in text and "do not assume anything changed" in text

        # The host's late answer is refused with an error reply, and so is a late browser relay.
        (execute,) = [m for m in host.received if m["type"] == "execute"]
        replies_before = len(host.received)
        host.send(_result(execute["request_id"], "too late"))
        wait_until(lambda: len(host.received) > replies_before)
        late = host.received[-1]
        assert late["type"] == "error" and late["request_id"] == execute["request_id"]
        assert "not pending" in late["message"]
        relay = _post_result(alice, session_id, person["metadata"]["tool_call_id"], _result("x"))
        assert relay.status_code == 409
        host.stop()


def test_cancel_while_suspended_ends_with_a_cancelled_error_and_a_valid_transcript(server, alice, silent_host,
                                                                                   scripts_dir):
    spec = write_script(scripts_dir / "c.json", [collect("print(1)"), say("never reached")])
    session_id, run, _ = run_to_tool_call(alice, silent_host.host_id, spec)
    wait_until(lambda: any(m["type"] == "execute" for m in silent_host.received))
    assert alice.call("POST", f"/api/sessions/{session_id}/cancel").status_code == 202
    stream = run.join(10)

    assert stream.last["type"] == "Error" and stream.last["metadata"]["cancelled"] is True
    assert stream.chunks[-2]["type"] == "AgenticUsage"
    assert stream.of("Message") == []
    body = session(alice, session_id)
    assert body["status"] == "cancelled" and body["running"] is False
    assert_transcript_valid(body["messages"])
    assert body["messages"][-1]["role"] == "tool"
    # Nothing is pending any more: a second cancel and a late relay are both refused.
    assert alice.call("POST", f"/api/sessions/{session_id}/cancel").status_code == 409
    call_id = stream.of("ToolCall")[0]["metadata"]["tool_call_id"]
    assert _post_result(alice, session_id, call_id, _result("r")).status_code == 409


def test_a_client_that_goes_away_does_not_cancel_the_run_and_a_later_reattach_sees_every_chunk(
        server, alice, silent_host, scripts_dir):
    spec = write_script(scripts_dir / "d.json", [collect("print(1)"), say("finished without anyone watching")])
    session_id = alice.new_session(silent_host.host_id, spec)
    start_and_hang_up(alice, session_id)
    # Nobody listens; the silent host never answers; the run ends by its own tool timeout, not cancelled.
    wait_until(lambda: not session(alice, session_id)["running"], timeout=server.state.settings.tool_timeout_s + 10)
    body = session(alice, session_id)
    assert body["status"] == "idle"
    assert_transcript_valid(body["messages"])
    replay = alice.call("GET", f"/api/sessions/{session_id}/stream?after=0", stream=True)
    events = [line[len("event: "):] for line in replay.iter_lines(decode_unicode=True) if line.startswith("event: ")]
    assert events[0] == "ToolCall" or "ToolCall" in events
    assert events[-1] == "Complete"
    assert "finished without anyone watching" in str(body["messages"][-1])


def test_a_result_relayed_by_the_browser_is_accepted_once_and_used_by_the_loop(server, alice, silent_host,
                                                                               scripts_dir):
    spec = write_script(scripts_dir / "r.json", [collect("print(1)"), say("Used the relayed result.")])
    session_id, run, call_id = run_to_tool_call(alice, silent_host.host_id, spec)
    wait_until(lambda: any(m["type"] == "execute" for m in silent_host.received))

    unknown = _post_result(alice, session_id, "call_unknown", _result("x"))
    assert unknown.status_code == 409 and "not_pending" in unknown.json()["error"]
    accepted = _post_result(alice, session_id, call_id, _result(call_id, "from the browser\n"))
    assert accepted.status_code == 202
    stream = run.join(10)
    assert stream.last["content"] == "Used the relayed result."
    assert stream.of("Metadata", "tool_result")[0]["metadata"]["stdout"] == "from the browser\n"
    (text,) = tool_result_texts(session(alice, session_id)["messages"])
    assert "Output:\nfrom the browser" in text

    duplicate = _post_result(alice, session_id, call_id, _result(call_id, "again\n"))
    assert duplicate.status_code == 409 and "already_answered" in duplicate.json()["error"]


def test_tool_results_for_unknown_sessions_and_foreign_sessions_are_refused(server, alice, silent_host,
                                                                           scripts_dir):
    bob = Client(server.url, server.token("bob"))
    spec = write_script(scripts_dir / "f.json", [collect("print(1)"), say("done")])
    session_id, run, call_id = run_to_tool_call(alice, silent_host.host_id, spec)

    assert _post_result(alice, "no-such-session", call_id, _result(call_id)).status_code == 404
    foreign = _post_result(bob, session_id, call_id, _result(call_id, "bob was here\n"))
    assert foreign.status_code == 404  # another user's session reads as unknown
    malformed = _post_result(alice, session_id, call_id, {"type": "execute_result", "ok": "yes"})
    assert malformed.status_code == 400 and "ok" in malformed.json()["error"]
    not_a_result = _post_result(alice, session_id, call_id, {"type": "ping"})
    assert not_a_result.status_code == 400

    assert _post_result(alice, session_id, call_id, _result(call_id, "alice's\n")).status_code == 202
    stream = run.join(10)
    assert stream.of("Metadata", "tool_result")[0]["metadata"]["stdout"] == "alice's\n"


def test_host_socket_results_that_are_not_pending_get_an_error_reply_and_the_loop_is_unaffected(
        server, alice, silent_host, scripts_dir):
    spec = write_script(scripts_dir / "w.json", [collect("print(1)"), say("done")])
    session_id, run, _ = run_to_tool_call(alice, silent_host.host_id, spec)
    execute = received_execute(silent_host)

    def reply_to(message: dict) -> dict:
        count = len(silent_host.received)
        silent_host.send(message)
        wait_until(lambda: len(silent_host.received) > count)
        return silent_host.received[-1]

    unknown = reply_to(_result("call_nope.run"))
    assert unknown["type"] == "error" and unknown["request_id"] == "call_nope.run"

    # Another user's host answering alice's pending request is refused too.
    bob = Client(server.url, server.token("bob"))
    intruder = TestHost(server.ws_url, bob.token, silent=True).start()
    try:
        count = len(intruder.received)
        intruder.send(_result(execute["request_id"], "bob's answer\n"))
        wait_until(lambda: len(intruder.received) > count)
        assert intruder.received[-1]["type"] == "error"
        assert intruder.received[-1]["request_id"] == execute["request_id"]
    finally:
        intruder.stop()

    silent_host.send(_result(execute["request_id"], "the real answer\n"))
    duplicate = reply_to(_result(execute["request_id"], "twice\n"))
    assert duplicate["type"] == "error" and duplicate["request_id"] == execute["request_id"]
    stream = run.join(10)
    assert stream.last["type"] == "Complete"
    (person,) = stream.of("Metadata", "tool_result")
    assert person["metadata"]["stdout"] == "the real answer\n"


# The channel itself, without a server: its contract under concurrency.

def test_channel_holds_one_pending_request_per_session():
    channel = ToolResultChannel()
    channel.open("s1", "c1.run", "c1", "h1")
    with pytest.raises(RuntimeError):
        channel.open("s1", "c2.run", "c2", "h1")
    channel.open("s2", "c3.run", "c3", "h1")  # other sessions are independent
    assert channel.pending_tool_call("s1") == "c1" and channel.pending_tool_call("s2") == "c3"


def test_channel_accepts_exactly_one_of_many_racing_deliveries():
    channel = ToolResultChannel()
    channel.open("s", "c.run", "c", "h")
    outcomes: list[Delivery] = []
    barrier = threading.Barrier(16)

    def deliver(n: int) -> None:
        barrier.wait()
        if n % 2:
            outcomes.append(channel.deliver_from_host("c.run", "h", {"n": n}))
        else:
            outcomes.append(channel.deliver_tool_result("s", "c", {"n": n}))

    threads = [threading.Thread(target=deliver, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count(Delivery.ACCEPTED) == 1
    assert set(outcomes) == {Delivery.ACCEPTED, Delivery.ALREADY_ANSWERED}
    result = channel.wait("s", 1, threading.Event())
    assert result is not None and "n" in result
    assert channel.pending_tool_call("s") is None


def test_channel_wait_returns_none_promptly_on_cancel_and_forgets_the_request():
    channel = ToolResultChannel()
    channel.open("s", "c.run", "c", "h")
    cancel = threading.Event()
    threading.Timer(0.15, cancel.set).start()
    started = time.monotonic()
    assert channel.wait("s", 60, cancel) is None
    assert time.monotonic() - started < 1
    assert channel.deliver_from_host("c.run", "h", {}) is Delivery.NOT_PENDING
    assert channel.deliver_tool_result("s", "c", {}) is Delivery.ALREADY_ANSWERED
    channel.open("s", "d.run", "d", "h")  # the slot is free again



def test_concurrent_runs_on_one_host_each_get_their_own_results(server, alice, scripts_dir):
    host = TestHost(server.ws_url, alice.token, delay_s=0.3).start()
    try:
        runs = {}
        for n in range(6):
            spec = write_script(scripts_dir / f"par{n}.json", [collect(f"print('session {n}')"), say(f"done {n}")])
            session_id = alice.new_session(host.host_id, spec)
            runs[n] = (session_id, BackgroundRun(alice, session_id, "go"))
        for n, (session_id, run) in runs.items():
            stream = run.join(20)
            assert stream.last["content"] == f"done {n}"
            assert stream.of("Metadata", "tool_result")[0]["metadata"]["stdout"] == f"session {n}\n"
            (text,) = tool_result_texts(session(alice, session_id)["messages"])
            assert f"Output:\nsession {n}" in text
    finally:
        host.stop()


def test_the_channel_remembers_answered_calls_only_for_recent_sessions(monkeypatch):
    import cloud.rendezvous as rendezvous

    monkeypatch.setattr(rendezvous, "ANSWERED_SESSIONS", 3)
    channel = ToolResultChannel()
    for n in range(5):
        channel.open(f"s{n}", f"c{n}.run", f"c{n}", "h")
        channel.close(f"s{n}")
    assert channel.deliver_tool_result("s4", "c4", {}) is Delivery.ALREADY_ANSWERED
    assert channel.deliver_tool_result("s2", "c2", {}) is Delivery.ALREADY_ANSWERED
    assert channel.deliver_tool_result("s0", "c0", {}) is Delivery.NOT_PENDING  # forgotten: still refused


def test_a_host_that_dies_mid_call_fails_the_call_within_the_reconnect_grace_not_the_tool_timeout(tmp_path,
                                                                                                 scripts_dir):
    from cloud.hostlink import RECONNECT_GRACE_S

    with running_server(tmp_path, keepalive_s=0.2, tool_timeout_s=120) as server:
        alice = Client(server.url, server.token("alice"))
        host = TestHost(server.ws_url, alice.token, silent=True).start()
        spec = write_script(scripts_dir / "dies.json", [collect("print(1)"), say("The host went away.")])
        session_id = alice.new_session(host.host_id, spec)
        background = BackgroundRun(alice, session_id, "go")
        wait_until(lambda: any(m["type"] == "execute" for m in host.received), timeout=10)
        host.stop()
        started = time.monotonic()
        stream = background.join(60)
        assert time.monotonic() - started < RECONNECT_GRACE_S + 3
        assert stream.last == {"type": "Complete", "content": "The host went away."}
        messages = session(alice, session_id)["messages"]
        assert_transcript_valid(messages)
        (text,) = tool_result_texts(messages)
        assert "disconnected" in text and "outcome is unknown" in text
