"""Run policies (auto / ask / readonly), preview-and-approve, and the stricter-wins rule (issue 7)."""
from __future__ import annotations

import threading

import pytest

from tests.support.client import Client, write_script
from tests.support.server import running_server
from tests.support.test_host import TestHost

ADD_DOOR = {"tool_call": {"name": "execute_task_automation", "input": {"code": "doc.add('Door', 'D9')"}}}


def _spec(scripts_dir, *turns):
    return write_script(scripts_dir / "policy.json", [list(t) for t in turns])


def _approve_when_asked(client: Client, session_id: str, decision: str, comment: str = ""):
    def on_frame(frame):
        chunk = frame.chunk or {}
        if (chunk.get("metadata") or {}).get("kind") == "approval_request":
            threading.Thread(target=lambda: client.call(
                "POST", f"/api/sessions/{session_id}/approval",
                headers={}, json={"tool_call_id": chunk["metadata"]["tool_call_id"], "decision": decision,
                                  "comment": comment})).start()
    return on_frame


def _set_policy(client: Client, session_id: str, policy: str) -> None:
    response = client.call("PUT", f"/api/sessions/{session_id}/policy", json={"policy": policy})
    assert response.status_code == 200, response.text


def test_ask_then_keep_commits_and_the_model_gets_the_report(server, alice, host, scripts_dir):
    sid = alice.new_session(host.host_id, _spec(scripts_dir, [ADD_DOOR], [{"text": "Kept."}]))
    _set_policy(alice, sid, "ask")
    before = len(host.document.elements)
    stream = alice.run(sid, "add a door", on_frame=_approve_when_asked(alice, sid, "keep"))
    request = stream.of("Metadata", "approval_request")
    assert len(request) == 1 and "D9" in request[0]["metadata"]["change_report"]
    result = stream.of("Metadata", "tool_result")[0]["metadata"]
    assert result["committed"] and result["decision"]["decision"] == "keep"
    assert len(host.document.elements) == before + 1
    assert stream.last["type"] == "Complete"


def test_ask_then_discard_leaves_the_document_and_passes_the_comment_to_the_model(server, alice, host, scripts_dir):
    sid = alice.new_session(host.host_id, _spec(scripts_dir, [ADD_DOOR], [{"text": "Discarded."}]))
    _set_policy(alice, sid, "ask")
    before = dict(host.document.elements)
    stream = alice.run(sid, "add a door", on_frame=_approve_when_asked(alice, sid, "discard", "wrong level"))
    assert host.document.elements == before
    session = alice.call("GET", f"/api/sessions/{sid}").json()
    tool_text = session["messages"][2]["content"][0]["content"][0]["text"]
    assert "discarded" in tool_text and "wrong level" in tool_text
    assert stream.of("Metadata", "tool_result")[0]["metadata"]["committed"] is False


def test_no_decision_in_time_counts_as_discard(tmp_path, scripts_dir):
    with running_server(tmp_path, keepalive_s=0.2, tool_timeout_s=5, approval_timeout_s=0.5) as srv:
        client = Client(srv.url, srv.token("alice"))
        test_host = TestHost(srv.ws_url, client.token).start()
        sid = client.new_session(test_host.host_id, _spec(scripts_dir, [ADD_DOOR], [{"text": "ok"}]))
        _set_policy(client, sid, "ask")
        before = dict(test_host.document.elements)
        stream = client.run(sid, "add a door")
        decision = stream.of("Metadata", "tool_result")[0]["metadata"]["decision"]
        assert decision["decision"] == "discard" and decision["by"] == "timeout"
        assert test_host.document.elements == before
        text = stream.of("Metadata", "tool_result")[0]["content"]
        assert "No one rejected it" in text and "no decision within" in text and "reviewed the preview" not in text
        test_host.stop()


def test_the_model_cannot_approve_through_its_tool_input(server, alice, host, scripts_dir):
    sneaky = {"tool_call": {"name": "execute_task_automation",
                            "input": {"code": "doc.add('Door', 'D9')", "decision": "keep"}}}
    sid = alice.new_session(host.host_id, _spec(scripts_dir, [sneaky], [{"text": "ok"}]))
    _set_policy(alice, sid, "ask")
    before = dict(host.document.elements)
    stream = alice.run(sid, "add a door")
    assert not stream.of("Metadata", "approval_request")
    assert "decision" in stream.of("Metadata", "tool_result")[0]["content"]  # refused: unknown argument
    assert host.document.elements == before


def test_approval_without_a_pending_preview_is_409_and_bad_decisions_are_400(server, alice, host, scripts_dir):
    sid = alice.new_session(host.host_id)
    assert alice.call("POST", f"/api/sessions/{sid}/approval",
                      json={"tool_call_id": "x", "decision": "keep"}).status_code == 409
    response = alice.call("POST", f"/api/sessions/{sid}/approval", json={"tool_call_id": "x", "decision": "maybe"})
    assert response.status_code == 400 and "decision" in response.json()["error"]


def test_readonly_refuses_automation_but_collection_works(server, alice, host, scripts_dir):
    collect = {"tool_call": {"name": "execute_data_collection", "input": {"code": "print(len(doc.elements))"}}}
    sid = alice.new_session(host.host_id, _spec(scripts_dir, [collect, ADD_DOOR], [{"text": "ok"}]))
    _set_policy(alice, sid, "readonly")
    before = dict(host.document.elements)
    stream = alice.run(sid, "look, then add a door")
    results = stream.of("Metadata", "tool_result")
    assert results[0]["metadata"]["ok"] and "8" in results[0]["metadata"]["stdout"]
    assert "read-only" in results[1]["content"]
    assert host.document.elements == before


@pytest.mark.parametrize("session_policy,user_policy,expect_committed", [
    ("auto", "readonly", False), ("readonly", "auto", False), ("auto", "auto", True)])
def test_the_stricter_of_session_and_admin_policy_wins(server, alice, host, scripts_dir, session_policy,
                                                       user_policy, expect_committed):
    admin = Client(server.url, server.token("root", admin=True))
    assert admin.call("PUT", "/api/admin/users/alice/policy", json={"policy": user_policy}).status_code == 200
    sid = alice.new_session(host.host_id, _spec(scripts_dir, [ADD_DOOR], [{"text": "ok"}]))
    _set_policy(alice, sid, session_policy)
    before = len(host.document.elements)
    alice.run(sid, "add a door")
    assert (len(host.document.elements) == before + 1) is expect_committed


def test_policy_is_re_read_after_the_script_runs(server, alice, scripts_dir, tmp_path):
    slow = TestHost(server.ws_url, alice.token, delay_s=1.0).start()
    sid = alice.new_session(slow.host_id, _spec(scripts_dir, [ADD_DOOR], [{"text": "ok"}]))
    before = dict(slow.document.elements)

    def on_frame(frame):
        if frame.chunk and frame.chunk["type"] == "ToolCall":
            threading.Timer(0.3, lambda: _set_policy(alice, sid, "readonly")).start()

    stream = alice.run(sid, "add a door", on_frame=on_frame)
    decision = stream.of("Metadata", "tool_result")[0]["metadata"]["decision"]
    assert decision == {"decision": "discard", "by": "policy", "comment": decision["comment"], "undecided": True}
    assert "No one rejected it" in stream.of("Metadata", "tool_result")[0]["content"]
    assert slow.document.elements == before
    slow.stop()


def test_edits_made_between_turns_reach_the_model_once(server, alice, host, scripts_dir):
    collect = {"tool_call": {"name": "execute_data_collection", "input": {"code": "print(1)"}}}
    sid = alice.new_session(host.host_id, _spec(scripts_dir, [collect], [collect], [{"text": "ok"}]))
    host.external_changes = {"summary": "2 elements modified by the person", "modified": [101, 102]}
    stream = alice.run(sid, "look twice")
    first, second = (r["content"] for r in stream.of("Metadata", "tool_result"))
    assert first.startswith("Note: since the previous run, the model was changed outside the agent "
                            "(2 elements modified by the person)")
    assert "outside the agent" not in second


def test_ask_on_a_host_that_cannot_hold_refuses_instead_of_committing_unreviewed(server, alice, scripts_dir):
    old_host = TestHost(server.ws_url, alice.token, capabilities=("context",)).start()
    sid = alice.new_session(old_host.host_id, _spec(scripts_dir, [ADD_DOOR], [{"text": "ok"}]))
    _set_policy(alice, sid, "ask")
    before = dict(old_host.document.elements)
    stream = alice.run(sid, "add a door")
    assert "cannot hold a change for review" in stream.of("Metadata", "tool_result")[0]["content"]
    assert old_host.document.elements == before and not [m for m in old_host.received if m["type"] == "execute"]
    old_host.stop()


def test_a_decision_taken_in_the_host_ends_the_wait_and_is_what_the_model_is_told(server, alice, host, scripts_dir):
    sid = alice.new_session(host.host_id, _spec(scripts_dir, [ADD_DOOR], [{"text": "ok"}]))
    _set_policy(alice, sid, "ask")
    before = len(host.document.elements)

    def on_frame(frame):
        meta = (frame.chunk or {}).get("metadata") or {}
        if meta.get("kind") == "approval_request":
            request_id = next(m["request_id"] for m in host.received if m["type"] == "execute")
            threading.Thread(target=host.decide_here, args=(request_id, "keep")).start()

    stream = alice.run(sid, "add a door", on_frame=on_frame)  # would wait 15 minutes without the host's word
    result = stream.of("Metadata", "tool_result")[0]["metadata"]
    assert result["committed"] and result["decision"]["by"] == "the person in the host"
    assert len(host.document.elements) == before + 1
    execute = next(m for m in host.received if m["type"] == "execute")
    assert execute["hold"] and execute["review"]


def test_when_host_and_chat_page_disagree_the_model_is_told_what_the_host_applied(server, alice, host, scripts_dir):
    sid = alice.new_session(host.host_id, _spec(scripts_dir, [ADD_DOOR], [{"text": "ok"}]))
    _set_policy(alice, sid, "ask")
    before = dict(host.document.elements)

    def on_frame(frame):
        meta = (frame.chunk or {}).get("metadata") or {}
        if meta.get("kind") == "approval_request":
            request_id = next(m["request_id"] for m in host.received if m["type"] == "execute")
            host.decided_here[request_id] = "discard"  # decided in the host, but its word never reached the cloud
            threading.Thread(target=lambda: alice.call("POST", f"/api/sessions/{sid}/approval", json={
                "tool_call_id": meta["tool_call_id"], "decision": "keep"})).start()

    stream = alice.run(sid, "add a door", on_frame=on_frame)
    result = stream.of("Metadata", "tool_result")[0]
    assert not result["metadata"]["committed"] and result["metadata"]["decision"]["decision"] == "discard"
    assert "discarded" in result["content"] and host.document.elements == before
