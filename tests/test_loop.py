"""The agent loop over the real server: a whole run, chunk order, and what the loop does with results."""
from __future__ import annotations

import hashlib

from cloud.contract import validate_chunk
from tests.support.client import write_script
from tests.support.spine import (
    assert_transcript_valid,
    automate,
    collect,
    edit,
    say,
    session,
    tool_result_texts,
)

RENAME_DOORS = """\
doors = doc.by_class('Door')
for n, i in enumerate(doors):
    e = doc.elements[i]
    e['name'] = e['levle'][-1] + '-' + str(n + 1)
print('renamed', len(doors))
"""


def _executes(host) -> list[dict]:
    return [m for m in host.received if m["type"] == "execute"]


def test_full_run_collects_automates_fixes_iterates_and_completes(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "full.json", [
        collect("print(len(doc.by_class('Door')))", text="Let me count the doors."),
        automate(RENAME_DOORS),
        edit({"old": "e['levle']", "new": "e['level']"}),
        edit({"old": "str(n + 1)", "new": "str(n + 1).zfill(2)"}),
        say("All six doors are renumbered per level."),
    ])
    session_id = alice.new_session(host.host_id, spec)
    stream = alice.run(session_id, "Renumber the doors by level")

    assert stream.last == {"type": "Complete", "content": "All six doors are renumbered per level."}
    names = sorted(host.document.elements[i]["name"] for i in host.document.by_class("Door"))
    assert names == ["1-01", "1-02", "1-03", "2-04", "2-05", "2-06"]

    sent = _executes(host)
    assert [m["mode"] for m in sent] == ["collect", "automate", "automate", "automate"]
    assert "e['level'][-1]" in sent[2]["code"] and "zfill(2)" in sent[3]["code"]
    assert all(m["epilogue"]["sha256"] == hashlib.sha256(m["epilogue"]["code"].encode()).hexdigest()
               for m in sent[1:])

    messages = session(alice, session_id)["messages"]
    assert [e["role"] for e in messages] == ["user"] + ["assistant", "tool"] * 4 + ["assistant"]
    assert_transcript_valid(messages)
    collected, failed, fixed, iterated = tool_result_texts(messages)
    assert "Output:\n6" in collected
    assert "rolled back" in failed and "KeyError" in failed and "(line 4)" in failed
    assert "committed" in fixed and "Budget: fix 1 of 5" in fixed and "6 element(s) changed" in fixed
    assert "committed" in iterated and "Budget: iteration 1 of 3" in iterated
    results = [p for e in messages if e["role"] == "tool" for p in e["content"]]
    assert [r["is_error"] for r in results] == [False, True, False, False]

    audit = server.state.store.audit(session_id=session_id)
    model_scripts = [a for a in audit if a["kind"] == "model"]
    assert len(model_scripts) == 4
    assert {a["sha256"] for a in model_scripts} == {hashlib.sha256(m["code"].encode()).hexdigest() for m in sent}
    assert all(a["host_app"] == "test" and a["capability_version"] == "test-1.0"
               for a in audit if a["kind"] == "epilogue")


def test_chunk_order_deltas_before_their_call_and_usage_then_complete_last(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "order.json", [
        [{"thinking": "The doors first, then the walls."}, *collect("print(doc.by_class('Door'))", "Counting.")],
        automate("doc.add('Wall', 'Partition')\nprint('added')"),
        say("Added a partition wall."),
    ])
    stream = alice.run(alice.new_session(host.host_id, spec), "Add a wall")
    chunks = stream.chunks
    for chunk in chunks:
        validate_chunk(chunk)

    assert chunks[0]["type"] == "Metadata" and chunks[0]["metadata"]["kind"] == "model"
    assert [c["type"] for c in chunks[-2:]] == ["AgenticUsage", "Complete"]
    assert chunks[-2]["metadata"]["output"] > 0
    calls = [i for i, c in enumerate(chunks) if c["type"] == "ToolCall"]
    assert len(calls) == 2
    for at in calls:
        call_id = chunks[at]["metadata"]["tool_call_id"]
        deltas = [i for i, c in enumerate(chunks) if c["type"] == "ToolInputDelta"
                  and c["metadata"]["tool_call_id"] == call_id]
        assert len(deltas) >= 2 and max(deltas) < at
        rebuilt = "".join(chunks[i]["content"] for i in deltas)
        assert rebuilt.startswith("{") and rebuilt.endswith("}")
        result = next(i for i, c in enumerate(chunks) if c["type"] == "Metadata"
                      and c["metadata"]["kind"] == "tool_result" and c["metadata"]["tool_call_id"] == call_id)
        assert at < result
        later_model_output = [i for i, c in enumerate(chunks[at + 1:result], at + 1)
                              if c["type"] in ("Message", "Thinking", "ToolInputDelta")]
        assert later_model_output == []
    thinking = "".join(c["content"] for c in stream.of("Thinking"))
    assert thinking == "The doors first, then the walls." and len(stream.of("Thinking")) > 1


def test_keepalive_frames_arrive_while_the_host_is_slow(server, alice, scripts_dir):
    from tests.support.test_host import TestHost

    slow = TestHost(server.ws_url, alice.token, delay_s=1.2).start()
    try:
        spec = write_script(scripts_dir / "slow.json", [collect("print('slow')"), say("done")])
        stream = alice.run(alice.new_session(slow.host_id, spec), "go")
    finally:
        slow.stop()
    assert stream.last["type"] == "Complete"
    # keepalive_s is 0.2 in tests: a 1.2 s wait must be bridged by several comment frames, all while suspended.
    frames = stream.frames
    call = next(i for i, f in enumerate(frames) if f.chunk and f.chunk["type"] == "ToolCall")
    result = next(i for i, f in enumerate(frames) if f.chunk and (f.chunk.get("metadata") or {}).get("kind") == "tool_result")
    waiting = [f for f in frames[call:result] if f.comment == "keepalive"]
    assert len(waiting) >= 3


def test_sixty_thousand_rows_reach_the_person_whole_and_the_model_capped_with_a_note(server, alice, host, scripts_dir):
    code = ("for n in range(60000):\n"
            "    print('IfcDoor | Single-Flush 900x2100 | Level ' + str(n % 3) + ' | fire rating EI30 | ' + 'x' * 40"
            " + (' | #' + str(n) if n % 100 == 0 else ''))\n")
    spec = write_script(scripts_dir / "big.json", [collect(code), say("Most doors are identical.")])
    session_id = alice.new_session(host.host_id, spec)
    stream = alice.run(session_id, "Dump every door")

    expected = "".join(
        "IfcDoor | Single-Flush 900x2100 | Level " + str(n % 3) + " | fire rating EI30 | " + "x" * 40
        + (" | #" + str(n) if n % 100 == 0 else "") + "\n" for n in range(60000))
    assert len(expected) > 5_000_000
    (person,) = stream.of("Metadata", "tool_result")
    assert person["metadata"]["stdout"] == expected
    stored = alice.call("GET", f"/api/sessions/{session_id}/results/{person['metadata']['tool_call_id']}").json()
    assert stored["stdout"] == expected

    (model_copy,) = tool_result_texts(session(alice, session_id)["messages"])
    assert len(model_copy) < server.state.settings.max_result_chars + 2_000
    assert "IfcDoor | Single-Flush 900x2100 | Level 0 | fire rating EI30 | " + "x" * 40 + "  [x19800]" in model_copy
    assert "59,397 repeated rows were collapsed" in model_copy  # 60,000 rows: 600 unique + 3 repeated kept
    assert "the person sees the full output" in model_copy
    assert "| #59900" in model_copy  # the tail is kept
    assert model_copy.index("[Note:") > model_copy.index("| #59900")


def test_empty_output_is_stated_explicitly(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "quiet.json", [collect("x = 1"), say("ok")])
    session_id = alice.new_session(host.host_id, spec)
    alice.run(session_id, "go")
    (text,) = tool_result_texts(session(alice, session_id)["messages"])
    assert "Output:\n(the script printed nothing)" in text


def test_invalid_tool_arguments_are_a_normal_result_and_nothing_runs(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "bad_args.json", [
        [{"tool_call": {"name": "execute_data_collection", "input": {"script": "print(1)"}}}],
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": "x", "edits": [{"old": "a", "new": "b"}]}}}],
        [{"tool_call": {"name": "no_such_tool", "input": {}}}],
        say("I will stop."),
    ])
    session_id = alice.new_session(host.host_id, spec)
    stream = alice.run(session_id, "go")
    assert stream.last["type"] == "Complete"
    assert _executes(host) == []
    missing, both, unknown = tool_result_texts(session(alice, session_id)["messages"])
    assert "was not run" in missing and "'code' is a required property" in missing and "'script'" in missing
    assert "exactly one of `code`" in both
    assert "unknown tool 'no_such_tool'" in unknown


def test_a_turn_without_a_connected_host_tells_the_model_so(server, alice, scripts_dir):
    spec = write_script(scripts_dir / "nohost.json", [collect("print(1)"), say("No host.")])
    session_id = alice.new_session(None, spec)
    stream = alice.run(session_id, "go")
    assert stream.last["type"] == "Complete"
    (text,) = tool_result_texts(session(alice, session_id)["messages"])
    assert "No host application is connected" in text


def test_a_script_that_runs_out_of_turns_ends_with_a_short_text(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "short.json", [collect("print(1)")])
    stream = alice.run(alice.new_session(host.host_id, spec), "go")
    assert stream.last == {"type": "Complete", "content": "The scripted conversation has no more turns."}


def test_a_second_message_continues_the_same_conversation(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "two.json", [
        automate("doc.add('Door', 'D9')"), say("Added D9."),
        edit({"old": "'D9'", "new": "'D10'"}), say("Added D10."),
    ])
    session_id = alice.new_session(host.host_id, spec)
    assert alice.run(session_id, "add a door").last["content"] == "Added D9."
    second = alice.run(session_id, "and another, named D10")
    assert second.last["content"] == "Added D10."
    names = [e["name"] for e in host.document.elements.values()]
    assert "D9" in names and "D10" in names
    text = tool_result_texts(session(alice, session_id)["messages"])[-1]
    assert "Budget" not in text  # budgets are per run: the new run's first automation is free


def test_several_tool_calls_in_one_turn_run_in_order_and_answer_in_one_entry(server, alice, host, scripts_dir):
    spec = write_script(scripts_dir / "multi.json", [
        [{"text": "Two looks at once."},
         {"tool_call": {"name": "execute_data_collection", "input": {"code": "print('doors', len(doc.by_class('Door')))"}}},
         {"tool_call": {"name": "execute_data_collection", "input": {"code": "print('walls', len(doc.by_class('Wall')))"}}}],
        say("6 doors, 2 walls."),
    ])
    session_id = alice.new_session(host.host_id, spec)
    stream = alice.run(session_id, "count")
    assert stream.last["content"] == "6 doors, 2 walls."
    assert [m["code"].split("'")[1] for m in _executes(host)] == ["doors", "walls"]
    messages = session(alice, session_id)["messages"]
    assert [e["role"] for e in messages] == ["user", "assistant", "tool", "assistant"]
    assert_transcript_valid(messages)
    assert [t.split("Output:\n")[1] for t in tool_result_texts(messages)] == ["doors 6", "walls 2"]


def test_a_model_that_never_stops_is_ended_by_the_turn_limit(tmp_path, scripts_dir):
    from tests.support.client import Client
    from tests.support.server import running_server
    from tests.support.test_host import TestHost

    with running_server(tmp_path, keepalive_s=0.2, max_turns=3) as server:
        alice = Client(server.url, server.token("alice"))
        host = TestHost(server.ws_url, alice.token).start()
        try:
            spec = write_script(scripts_dir / "forever.json", [collect(f"print({n})") for n in range(10)])
            session_id = alice.new_session(host.host_id, spec)
            stream = alice.run(session_id, "go")
            messages = session(alice, session_id)["messages"]
        finally:
            host.stop()
    assert stream.last["type"] == "Error" and "limit of 3 model turns" in stream.last["content"]
    assert stream.chunks[-2]["type"] == "AgenticUsage"
    assert len(_executes(host)) == 3
    assert_transcript_valid(messages)


def test_a_crash_inside_a_tool_becomes_a_tool_result_and_the_session_stays_usable(server, alice, host, scripts_dir,
                                                                                  monkeypatch):
    from cloud.hosts.registry import get_provider

    def broken_view_policy(result):
        raise RuntimeError("provider bug")

    monkeypatch.setattr(get_provider("test"), "view_to_capture", broken_view_policy)
    spec = write_script(scripts_dir / "crash.json", [automate("doc.add('Wall', 'W')"), say("I will check the model."),
                                                    collect("print(len(doc.by_class('Wall')))"), say("3 walls.")])
    session_id = alice.new_session(host.host_id, spec)
    stream = alice.run(session_id, "add a wall")
    assert stream.last == {"type": "Complete", "content": "I will check the model."}
    (result,) = stream.of("Metadata", "tool_result")
    assert result["metadata"]["ok"] is False and "RuntimeError: provider bug" in result["content"]
    body = session(alice, session_id)
    assert_transcript_valid(body["messages"]) and body["status"] == "idle"
    (text,) = tool_result_texts(body["messages"])
    assert "the host may have committed it" in text
    assert alice.run(session_id, "check").last["content"] == "3 walls."


def test_a_crash_in_the_model_adapter_ends_the_run_with_an_error_and_status(server, alice, host, scripts_dir,
                                                                           monkeypatch):
    from cloud.vendors.scripted import ScriptedModel

    def broken_stream(self, request, cancel):
        raise KeyError("adapter bug")
        yield  # a generator, like the real one

    monkeypatch.setattr(ScriptedModel, "stream", broken_stream)
    spec = write_script(scripts_dir / "adapter.json", [say("never")])
    session_id = alice.new_session(host.host_id, spec)
    stream = alice.run(session_id, "hi")
    assert stream.last["type"] == "Error" and "adapter bug" in stream.last["content"]
    body = session(alice, session_id)
    assert body["status"] == "error" and body["running"] is False
    assert_transcript_valid(body["messages"])
