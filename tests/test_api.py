"""The JSON API and SSE over real HTTP: sessions, streams, reattaching, persistence across restarts."""
from __future__ import annotations

import io

from PIL import Image

from tests.support.client import Client, parse_sse, write_script
from tests.support.server import running_server
from tests.support.spine import (
    assert_transcript_valid,
    automate,
    collect,
    edit,
    run_to_tool_call,
    say,
    session,
    tool_result_texts,
)
from tests.support.test_host import TestHost

FAST = {"keepalive_s": 0.2, "tool_timeout_s": 5.0}


def test_the_transcript_and_the_current_script_survive_a_server_restart(tmp_path, scripts_dir):
    spec = write_script(scripts_dir / "restart.json", [
        automate("doc.add('Door', 'Before restart')"), say("Added one."),
        edit({"old": "'Before restart'", "new": "'After restart'"}), say("Added another."),
    ])
    db_path = tmp_path / "kept.db"
    with running_server(tmp_path, db_path=db_path, **FAST) as first:
        token = first.token("alice")
        alice = Client(first.url, token)
        host = TestHost(first.ws_url, token).start()
        session_id = alice.new_session(host.host_id, spec)
        assert alice.run(session_id, "add a door").last["content"] == "Added one."
        before = session(alice, session_id)
        host.stop()

    with running_server(tmp_path, db_path=db_path, **FAST) as second:
        alice = Client(second.url, token)  # tokens live in the store too
        after = session(alice, session_id)
        assert after["messages"] == before["messages"] and len(after["messages"]) == 4
        assert after["usage"] == before["usage"] and after["model"] == spec
        # The host reconnects under its old id; the edit applies to the script the server kept.
        revived = TestHost(second.ws_url, token, host_id=host.host_id, document=host.document).start()
        try:
            assert revived.host_id == host.host_id
            stream = alice.run(session_id, "and one more")
        finally:
            revived.stop()
        assert stream.last["content"] == "Added another."
        executed = [m["code"] for m in revived.received if m["type"] == "execute"]
        assert executed == ["doc.add('Door', 'After restart')"]
        messages = session(alice, session_id)["messages"]
        assert messages[:4] == before["messages"] and len(messages) == 8
        assert_transcript_valid(messages)


def test_get_session_shows_the_models_view_of_the_transcript_and_the_usage(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "view.json", [collect("print('x' * 50000)"), say("Long.")])
    session_id = alice.new_session(host.host_id, spec)
    stream = alice.run(session_id, "print a lot")
    body = session(alice, session_id)
    assert set(body) >= {"session_id", "host_id", "model", "messages", "usage"}
    assert body["session_id"] == session_id and body["host_id"] == host.host_id and body["model"] == spec
    assert body["status"] == "idle" and body["running"] is False
    assert body["messages"][0]["role"] == "user"
    assert {"type": "text", "text": "print a lot"} in body["messages"][0]["content"]
    (text,) = tool_result_texts(body["messages"])
    assert len(text) < 25_000 and "the person sees the full output" in text
    usage = stream.of("AgenticUsage")[0]["metadata"]
    assert body["usage"]["output"] == usage["output"] > 0
    assert body["usage"]["uncached_input"] == usage["uncached_input"] > 0


def test_a_second_message_while_a_run_is_in_progress_is_refused_with_409(server, alice, scripts_dir):
    host = TestHost(server.ws_url, alice.token, delay_s=1.0).start()
    try:
        spec = write_script(scripts_dir / "busy.json", [collect("print(1)"), say("done")])
        session_id, run, _ = run_to_tool_call(alice, host.host_id, spec, "first")
        other = write_script(scripts_dir / "other.json", [say("other")])
        busy = alice.call("POST", f"/api/sessions/{session_id}/messages", json={"text": "second", "model": other})
        assert busy.status_code == 409
        assert session(alice, session_id)["model"] == spec  # the refused message switched nothing
        assert session(alice, session_id)["running"] is True
        assert run.join(10).last["type"] == "Complete"
    finally:
        host.stop()
    assert [e["role"] for e in session(alice, session_id)["messages"]].count("user") == 1


def test_a_reloaded_page_reattaches_to_the_run_and_misses_nothing(server, alice, scripts_dir):
    host = TestHost(server.ws_url, alice.token, delay_s=0.8).start()
    try:
        spec = write_script(scripts_dir / "reattach.json", [collect("print('slow')"), say("finished")])
        session_id, run, _ = run_to_tool_call(alice, host.host_id, spec)
        seen = session(alice, session_id)["run_chunks"]
        assert seen >= 2
        again = alice.call("GET", f"/api/sessions/{session_id}/stream", params={"after": seen}, stream=True)
        assert again.status_code == 200
        rest = parse_sse(again)
        whole = run.join(10)
    finally:
        host.stop()
    assert rest.chunks == whole.chunks[seen:]
    assert rest.last["type"] == "Complete"
    # The finished run stays readable: a page coming back after the end replays what it missed, then the end.
    replay = alice.call("GET", f"/api/sessions/{session_id}/stream", params={"after": seen})
    assert replay.status_code == 200 and replay.text.count("event: ") == len(whole.chunks) - seen


def test_sse_frames_name_their_chunk_type(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "frames.json", [say("hello there, this is a longer reply")])
    stream = alice.run(alice.new_session(host.host_id, spec), "hi")
    data_frames = [f for f in stream.frames if f.chunk is not None]
    assert all(f.event == f.chunk["type"] for f in data_frames)
    assert len(stream.of("Message")) > 1


def test_request_bodies_are_validated_with_the_field_named(server, alice, host, scripts_dir):
    session_id = alice.new_session(host.host_id, write_script(scripts_dir / "v.json", [say("x")]))
    cases = [
        ("POST", "/api/sessions", {"host_id": host.host_id, "colour": "red"}, "colour"),
        ("POST", "/api/sessions", {"host_id": 7}, "host_id"),
        ("POST", "/api/sessions", {"model": "nonsense"}, "vendor:model"),
        ("POST", "/api/sessions", {"model": "martian:x"}, "unknown vendor"),
        ("POST", f"/api/sessions/{session_id}/messages", {}, "text"),
        ("POST", f"/api/sessions/{session_id}/messages", {"text": "   "}, "text"),
        ("POST", f"/api/sessions/{session_id}/messages", {"text": "x" * 100_001}, "text"),
        ("POST", f"/api/sessions/{session_id}/tool-results", {"tool_call_id": 5, "result": {}}, "tool_call_id"),
        ("PUT", f"/api/sessions/{session_id}/policy", {"policy": "yolo"}, "policy"),
        ("POST", f"/api/sessions/{session_id}/approval", {"tool_call_id": "c", "decision": "maybe"}, "decision"),
    ]
    for method, path, body, named in cases:
        response = alice.call(method, path, json=body)
        assert response.status_code == 400, (path, body, response.status_code)
        assert named in response.json()["error"], (path, body, response.json())
    not_json = alice.call("POST", "/api/sessions", data="{", headers={"Content-Type": "application/json"})
    assert not_json.status_code == 400
    unknown_host = alice.call("POST", "/api/sessions", json={"host_id": "h_unknown"})
    assert unknown_host.status_code == 404 and "host_id" in unknown_host.json()["error"]


def test_unknown_sessions_are_404_and_idle_sessions_refuse_cancel_and_approval(server, alice, host, scripts_dir):
    for method, suffix in (("GET", ""), ("POST", "/messages"), ("POST", "/cancel"), ("GET", "/stream")):
        assert alice.call(method, f"/api/sessions/nope{suffix}", json={"text": "x"}).status_code == 404
    session_id = alice.new_session(host.host_id, write_script(scripts_dir / "idle.json", [say("x")]))
    assert alice.call("POST", f"/api/sessions/{session_id}/cancel").status_code == 409
    approval = alice.call("POST", f"/api/sessions/{session_id}/approval",
                          json={"tool_call_id": "call_x", "decision": "keep"})
    assert approval.status_code == 409


def test_a_session_picks_the_users_only_host_and_a_model_can_be_changed_per_message(server, alice, host,
                                                                                     scripts_dir):
    first = write_script(scripts_dir / "m1.json", [say("one")])
    second = write_script(scripts_dir / "m2.json", [say("two")])
    created = alice.call("POST", "/api/sessions", json={"model": first})
    assert created.status_code == 201 and created.json()["host_id"] == host.host_id
    session_id = created.json()["session_id"]
    assert alice.run(session_id, "a").last["content"] == "one"
    assert alice.run(session_id, "b", model=second).last["content"] == "two"
    assert session(alice, session_id)["model"] == second
    no_model = alice.new_session(host.host_id)
    refused = alice.call("POST", f"/api/sessions/{no_model}/messages", json={"text": "hi"})
    assert refused.status_code == 400 and "model" in refused.json()["error"]


def test_the_image_of_a_geometric_change_is_attached_and_served(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "img.json", [automate("doc.add('Wall', 'New wall')"), say("Drawn.")])
    session_id = alice.new_session(host.host_id, spec)
    stream = alice.run(session_id, "add a wall")
    (result,) = stream.of("Metadata", "tool_result")
    image = result["metadata"]["image"]
    assert image["view"] == "Level 1" and image["width"] > 0
    png = alice.call("GET", f"/api/sessions/{session_id}/images/{image['image_id']}")
    assert png.status_code == 200 and png.headers["Content-Type"] == "image/png"
    assert Image.open(io.BytesIO(png.content)).size == (image["width"], image["height"])
    export = next(m for m in host.received if m["type"] == "export_view")
    from cloud.vendors.scripted import ScriptedModel  # the session's model: it declares its image ceiling

    assert export["max_px"] == ScriptedModel.image_max_px and export["element_ids"]
    assert max(image["width"], image["height"]) == export["max_px"]  # rendered at the ceiling, not above
    messages = session(alice, session_id)["messages"]
    (tool_part,) = messages[2]["content"]
    assert [p["type"] for p in tool_part["content"]] == ["text", "image"]
    assert "Image of view 'Level 1' attached" in tool_part["content"][0]["text"]


def test_capture_view_returns_an_image_to_the_model(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "cap.json", [
        [{"tool_call": {"name": "capture_view", "input": {"view": "Level 2", "element_ids": [101, 102]}}}],
        say("Seen."),
    ])
    session_id = alice.new_session(host.host_id, spec)
    stream = alice.run(session_id, "show me level 2")
    (result,) = stream.of("Metadata", "tool_result")
    assert result["metadata"]["ok"] is True and result["metadata"]["image"]["view"] == "Level 2"
    export = next(m for m in host.received if m["type"] == "export_view")
    assert export["view"] == "Level 2" and export["element_ids"] == [101, 102]
    (tool_part,) = session(alice, session_id)["messages"][2]["content"]
    assert tool_part["content"][1]["type"] == "image" and tool_part["is_error"] is False
