"""The scripted model: the fixed file format, realistic streaming, and where its files may come from."""
from __future__ import annotations

import json
import os
import threading

import pytest

from cloud.vendors.base import ModelError, TurnRequest
from cloud.vendors.registry import ModelSpecError, check_allowed_for_http, create_model
from cloud.vendors.scripted import ScriptedModel
from tests.support.client import write_script
from tests.support.spine import collect, say
from tests.vendors.replay.base import drain

DESIGN_EXAMPLE = {"turns": [
    [{"thinking": "Let me look at the doors first."},
     {"text": "I'll inspect the doors."},
     {"tool_call": {"name": "execute_data_collection", "input": {"code": "print(len(model.by_type('IfcDoor')))"}}}],
    [{"text": "All doors are renumbered."}],
]}


def _play(model: ScriptedModel, transcript: list, max_tokens: int = 32_000):
    return drain(model.stream(TurnRequest("sys", transcript, (), max_tokens, "s1"), threading.Event()))


def test_the_design_example_streams_in_several_pieces_and_resumes_from_the_transcript(tmp_path):
    path = tmp_path / "design.json"
    path.write_text(json.dumps(DESIGN_EXAMPLE))
    model = create_model(f"scripted:{path}")
    chunks, turn = _play(model, [])

    kinds = [c.type for c in chunks]
    assert kinds.index("Thinking") < kinds.index("Message") < kinds.index("ToolInputDelta") < kinds.index("ToolCall")
    assert kinds[-1] == "ToolCall"
    for kind in ("Thinking", "Message", "ToolInputDelta"):
        assert kinds.count(kind) >= 2, kind
    assert "".join(c.content for c in chunks if c.type == "Thinking") == "Let me look at the doors first."
    partial = "".join(c.content for c in chunks if c.type == "ToolInputDelta")
    assert json.loads(partial) == DESIGN_EXAMPLE["turns"][0][2]["tool_call"]["input"]
    call = chunks[-1].metadata
    assert call["name"] == "execute_data_collection" and call["input"] == json.loads(partial)
    assert {c.metadata["tool_call_id"] for c in chunks if c.type == "ToolInputDelta"} == {call["tool_call_id"]}
    assert turn.stop_reason == "tool_use" and turn.tool_calls[0]["id"] == call["tool_call_id"]
    assert turn.usage.output > 0

    played = [{"role": "user", "content": []}, {"role": "assistant", "model": model.spec, "content": turn.content},
              {"role": "tool", "content": []}]
    chunks, turn = _play(model, played)
    assert turn.text == "All doors are renumbered." and turn.stop_reason == "end_turn"
    chunks, turn = _play(model, [*played, {"role": "assistant", "model": model.spec, "content": []}])
    assert turn.text == "The scripted conversation has no more turns."


def test_it_stops_at_max_tokens_like_a_real_model(tmp_path):
    path = tmp_path / "long.json"
    path.write_text(json.dumps({"turns": [[{"text": "x" * 400}]]}))
    chunks, turn = _play(ScriptedModel(str(path)), [], max_tokens=25)
    assert turn.stop_reason == "max_tokens" and len(turn.text) <= 100


@pytest.mark.parametrize("content, problem", [
    ("not json", "cannot read script"),
    (json.dumps({"turns": "nope"}), "expected"),
    (json.dumps([[{"text": "a"}]]), "expected"),
    (json.dumps({"turns": [[{"speech": "a"}]]}), "turn 0: each item is one of thinking, text, tool_call"),
    (json.dumps({"turns": [[{"text": "a", "thinking": "b"}]]}), "turn 0"),
])
def test_files_that_break_the_format_are_refused_with_a_clear_message(tmp_path, content, problem):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ModelError) as refused:
        ScriptedModel(str(path))
    assert problem in str(refused.value)


def test_only_files_under_nexus_scripted_dirs_are_allowed_over_http(tmp_path, monkeypatch):
    allowed, other = tmp_path / "allowed", tmp_path / "other"
    allowed.mkdir()
    other.mkdir()
    (other / "x.json").write_text("{}")
    (allowed / "link.json").symlink_to(other / "x.json")
    monkeypatch.setenv("NEXUS_SCRIPTED_DIRS", os.pathsep.join([str(allowed), str(tmp_path / "also")]))
    check_allowed_for_http(f"scripted:{allowed / 'x.json'}")
    check_allowed_for_http(f"scripted:{tmp_path / 'also' / 'deep' / 'y.json'}")
    for outside in (other / "x.json", allowed / ".." / "other" / "x.json", allowed / "link.json", "/etc/passwd",
                    "relative.json"):
        with pytest.raises(ModelSpecError) as refused:
            check_allowed_for_http(f"scripted:{outside}")
        assert refused.value.status == 403
    monkeypatch.delenv("NEXUS_SCRIPTED_DIRS")
    with pytest.raises(ModelSpecError):
        check_allowed_for_http(f"scripted:{allowed / 'x.json'}")


def test_the_server_refuses_a_scripted_path_outside_the_allowed_dirs_with_403(server, alice, host, tmp_path,
                                                                               scripts_dir):
    outside = tmp_path / "outside.json"
    write_script(outside, [say("should never play")])
    spec = f"scripted:{outside}"
    created = alice.call("POST", "/api/sessions", json={"host_id": host.host_id, "model": spec})
    assert created.status_code == 403 and "NEXUS_SCRIPTED_DIRS" in created.json()["error"]
    fine = alice.new_session(host.host_id, write_script(scripts_dir / "ok.json", [say("ok")]))
    message = alice.call("POST", f"/api/sessions/{fine}/messages", json={"text": "hi", "model": spec})
    assert message.status_code == 403
    traversal = f"scripted:{scripts_dir}/../outside.json"
    assert alice.call("POST", "/api/sessions", json={"model": traversal}).status_code == 403
    assert alice.run(fine, "hi").last == {"type": "Complete", "content": "ok"}


def test_a_broken_scripted_file_is_a_clear_client_error_not_a_crash(server, alice, host, scripts_dir):
    path = scripts_dir / "broken.json"
    path.write_text('{"turns": [[{"speech": "hi"}]]}')
    session_id = alice.new_session(host.host_id, f"scripted:{path}")
    response = alice.call("POST", f"/api/sessions/{session_id}/messages", json={"text": "hi"})
    assert response.status_code == 400
    assert "each item is one of thinking, text, tool_call" in response.json()["error"]
    missing = alice.call("POST", f"/api/sessions/{session_id}/messages",
                         json={"text": "hi", "model": f"scripted:{scripts_dir / 'missing.json'}"})
    assert missing.status_code == 400 and "cannot read script" in missing.json()["error"]


def test_a_scripted_run_over_http_plays_its_turns_in_order(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "play.json", [
        [{"thinking": "Counting first."}, *collect("print(len(doc.by_class('Wall')))", "Counting walls.")],
        say("There are 2 walls."),
    ])
    stream = alice.run(alice.new_session(host.host_id, spec), "how many walls?")
    assert "".join(c["content"] for c in stream.of("Message")) == "Counting walls.There are 2 walls."
    assert stream.of("Metadata", "tool_result")[0]["metadata"]["stdout"] == "2\n"
    assert stream.of("Metadata", "model")[0]["metadata"]["vendor"] == "scripted"


def test_the_scripted_model_resumes_after_a_compaction_hides_its_earlier_turns(tmp_path):
    from cloud.transcript import model_view

    path = tmp_path / "s.json"
    path.write_text('{"turns": [[{"text": "one"}], [{"text": "two"}], [{"text": "three"}]]}')
    model = ScriptedModel(str(path))
    first = _play(model, [])[1]
    second = _play(model, [{"role": "assistant", "model": model.spec, "content": first.content}])[1]
    transcript = [{"role": "user", "content": [{"type": "text", "text": "a"}]},
                  {"role": "assistant", "model": model.spec, "content": first.content},
                  {"role": "user", "content": [{"type": "text", "text": "b"}]},
                  {"role": "assistant", "model": model.spec, "content": second.content},
                  {"role": "compaction", "summary": "said one and two", "replaced": 3, "model": model.spec, "kept": 1},
                  {"role": "assistant", "model": model.spec, "content": second.content},
                  {"role": "user", "content": [{"type": "text", "text": "c"}]}]
    stream = model.stream(TurnRequest("sys", model_view(transcript), (), 1000, "s"), threading.Event())
    chunks = list(_drain(stream))
    assert "".join(c.content for c in chunks) == "three"


def test_a_script_held_in_memory_plays_like_a_file_and_is_checked_the_same_way():
    model = ScriptedModel.from_turns(DESIGN_EXAMPLE["turns"], name="design")
    chunks, turn = _play(model, [])
    assert model.spec == "scripted:design" and turn.tool_calls[0]["name"] == "execute_data_collection"
    assert [c.type for c in chunks][-1] == "ToolCall"
    _, after = _play(model, [{"role": "assistant", "model": model.spec, "content": turn.content}])
    assert after.text == "All doors are renumbered."
    with pytest.raises(ModelError, match="turn 0: each item is one of thinking, text, tool_call"):
        ScriptedModel.from_turns([[{"speech": "hi"}]])
    with pytest.raises(ModelError, match="tool_call needs a name"):
        ScriptedModel.from_turns([[{"tool_call": {"input": {}}}]])


def _drain(stream):
    while True:
        try:
            yield next(stream)
        except StopIteration:
            return


def test_the_person_sees_the_whole_history_once_with_the_compaction_marker_where_it_cut():
    from cloud.transcript import person_view

    def user(t):
        return {"role": "user", "content": [{"type": "text", "text": t}]}

    marker = {"role": "compaction", "summary": "s", "replaced": 2, "kept": 2}
    stored = [user("a"), user("b"), user("c"), user("d"), marker, user("c"), user("d"), user("e")]
    texts = [e.get("content", [{}])[0].get("text") if e["role"] == "user" else "MARKER" for e in person_view(stored)]
    assert texts == ["a", "b", "MARKER", "c", "d", "e"]
