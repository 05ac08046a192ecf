"""Fix and iteration budgets, the output budget of every phase, and the max_tokens retry."""
from __future__ import annotations

from cloud.config import Settings
from cloud.session import Phase, SessionState, max_tokens_for, resolve_phase
from tests.support.client import Client, write_script
from tests.support.server import running_server
from tests.support.spine import automate, collect, edit, say, session, tool_result_texts
from tests.support.test_host import TestHost

HEAVY, LIGHT = Settings().heavy_max_tokens, Settings().light_max_tokens
FAILING = "doc.add('Door', 'X')\nraise ValueError('not yet')\n"
WORKING = "doc.add('Door', 'X')\n"


def _executes(host) -> int:
    return sum(1 for m in host.received if m["type"] == "execute")


def test_fix_cap_after_five_failed_fixes_returns_a_normal_result_and_a_budget_chunk(server, alice, host,
                                                                                   scripts_dir):
    turns = [automate(FAILING)] + [automate(FAILING + f"# fix {n}\n") for n in range(1, 6)]
    turns += [automate(WORKING), say("I could not make it work.")]
    spec = write_script(scripts_dir / "fix.json", turns)
    session_id = alice.new_session(host.host_id, spec)
    doors_before = len(host.document.by_class("Door"))
    stream = alice.run(session_id, "add a door")

    assert stream.last == {"type": "Complete", "content": "I could not make it work."}
    assert _executes(host) == 6  # the first attempt and five fixes; the seventh is refused before the host
    assert len(host.document.by_class("Door")) == doors_before
    (budget,) = stream.of("Metadata", "budget")
    assert "5 of 5" in budget["content"]
    texts = tool_result_texts(session(alice, session_id)["messages"])
    assert "Budget" not in texts[0]
    assert [f"Budget: fix {n} of 5." in texts[n] for n in range(1, 6)] == [True] * 5
    assert "budget for fixing failed runs is used up" in texts[6] and "Nothing ran" in texts[6]
    assert "summarise honestly" in texts[6]
    call_ids = [c["metadata"]["tool_call_id"] for c in stream.of("ToolCall")]
    assert budget["metadata"]["tool_call_id"] == call_ids[6]


def test_iteration_cap_after_three_committed_refinements(server, alice, host, scripts_dir):
    turns = [automate(WORKING)] + [edit({"old": f"'X{n - 1 or ''}'", "new": f"'X{n}'"}) for n in range(1, 5)]
    turns += [say("Three refinements were all I could do.")]
    spec = write_script(scripts_dir / "iterate.json", turns)
    session_id = alice.new_session(host.host_id, spec)
    stream = alice.run(session_id, "add doors")

    assert _executes(host) == 4
    names = {host.document.elements[i]["name"] for i in host.document.by_class("Door")}
    assert {"X", "X1", "X2", "X3"} <= names and "X4" not in names
    (budget,) = stream.of("Metadata", "budget")
    assert "3 of 3" in budget["content"]
    texts = tool_result_texts(session(alice, session_id)["messages"])
    assert "Budget: iteration 3 of 3." in texts[3]
    assert "budget for refining a committed result is used up" in texts[4]


def test_caps_are_configurable_and_reset_with_each_new_message(tmp_path, scripts_dir):
    with running_server(tmp_path, keepalive_s=0.2, max_fixes=1, max_iterations=1) as server:
        alice = Client(server.url, server.token("alice"))
        host = TestHost(server.ws_url, alice.token).start()
        try:
            spec = write_script(scripts_dir / "small.json", [
                automate(FAILING), automate(FAILING), automate(WORKING), say("Gave up."),
                automate(FAILING), automate(WORKING), say("Second message: fixed within one attempt."),
            ])
            session_id = alice.new_session(host.host_id, spec)
            first = alice.run(session_id, "try")
            assert len(first.of("Metadata", "budget")) == 1 and _executes(host) == 2
            second = alice.run(session_id, "try again")
            assert second.of("Metadata", "budget") == [] and _executes(host) == 4
            assert second.last["content"] == "Second message: fixed within one attempt."
            texts = tool_result_texts(session(alice, session_id)["messages"])
            assert "1 of 1" in texts[2] and "Budget: fix 1 of 1." in texts[4]
        finally:
            host.stop()


def test_every_phase_is_reachable_with_its_output_budget(server, alice, host, scripts_dir, recording_vendor):
    path = scripts_dir / "phases.json"
    write_script(path, [
        collect("print(len(doc.by_class('Door')))"),  # initial
        automate(FAILING),  # post_data_collection
        automate(WORKING),  # edit (a fix)
        edit({"old": "'X'", "new": "'Y'"}),  # verify: a decision after a commit, here a refinement
        edit({"old": "'Y'", "new": "'Z'"}),
        edit({"old": "'Z'", "new": "'W'"}),
        edit({"old": "'W'", "new": "'V'"}),  # verify, refused: the iteration cap
        say("Summary: the door is called W."),  # summary
    ])
    session_id = alice.new_session(host.host_id, f"recording:{path}")
    stream = alice.run(session_id, "go")
    assert stream.last["content"] == "Summary: the door is called W."
    asked = [r["max_tokens"] for r in recording_vendor[session_id]]
    assert asked == [HEAVY, HEAVY, HEAVY, LIGHT, LIGHT, LIGHT, LIGHT, LIGHT]
    assert len(stream.of("Metadata", "budget")) == 1


def test_phase_resolution_covers_every_phase():
    settings = Settings()
    state = SessionState()
    assert resolve_phase(state) is Phase.INITIAL
    state.last_completed_tool = "execute_data_collection"
    assert resolve_phase(state) is Phase.POST_DATA_COLLECTION
    state.current_script, state.last_completed_tool, state.last_task_committed = "x", "execute_task_automation", False
    assert resolve_phase(state) is Phase.EDIT
    state.last_task_committed = True
    assert resolve_phase(state) is Phase.VERIFY
    state.last_completed_tool = "execute_data_collection"  # a look after a commit may precede a new script
    assert resolve_phase(state) is Phase.POST_DATA_COLLECTION
    state.cap_reached = True
    assert resolve_phase(state) is Phase.SUMMARY
    budgets = {phase: max_tokens_for(phase, settings) for phase in Phase}
    assert budgets == {Phase.INITIAL: HEAVY, Phase.POST_DATA_COLLECTION: HEAVY, Phase.EDIT: HEAVY,
                       Phase.VERIFY: LIGHT, Phase.SUMMARY: LIGHT}
    state.start_run()
    assert resolve_phase(state) is Phase.INITIAL and state.current_script == "x"


def test_a_light_turn_cut_inside_a_tool_call_is_rerun_once_with_the_heavy_budget(tmp_path, scripts_dir,
                                                                                 recording_vendor):
    long_script = WORKING + "".join(f"doc.add('Wall', 'W{n:03}')\n" for n in range(40))  # ~1,000 chars
    with running_server(tmp_path, keepalive_s=0.2, light_max_tokens=60) as server:
        alice = Client(server.url, server.token("alice"))
        host = TestHost(server.ws_url, alice.token).start()
        try:
            path = scripts_dir / "retry.json"
            write_script(path, [automate(WORKING), automate(long_script, text="Now the walls."), say("Done.")])
            session_id = alice.new_session(host.host_id, f"recording:{path}")
            stream = alice.run(session_id, "go")
            messages = session(alice, session_id)["messages"]
        finally:
            host.stop()
    assert stream.last == {"type": "Complete", "content": "Done."}
    assert [r["max_tokens"] for r in recording_vendor[session_id]] == [HEAVY, 60, HEAVY, 60]

    chunks = stream.chunks
    (reset,) = [i for i, c in enumerate(chunks) if c["type"] == "Metadata" and c["metadata"]["kind"] == "reset_turn"]
    cut_ids = {c["metadata"]["tool_call_id"] for c in chunks[:reset] if c["type"] == "ToolInputDelta"}
    finished = {c["metadata"]["tool_call_id"] for c in chunks if c["type"] == "ToolCall"}
    assert len(cut_ids - finished) == 1  # the half-streamed call never completed and never ran
    assert "".join(c["content"] for c in chunks[reset:] if c["type"] == "Message").startswith("Now the walls.")
    executes = [m for m in host.received if m["type"] == "execute"]
    assert len(executes) == 2 and executes[1]["code"] == long_script
    assistant_calls = [p for e in messages if e["role"] == "assistant" for p in e["content"] if p["type"] == "tool_call"]
    assert [c["input"].get("code") for c in assistant_calls] == [WORKING, long_script]
    assert len(host.document.by_class("Wall")) == 2 + 40


def test_a_call_cut_even_with_the_heavy_budget_is_not_run_and_the_model_is_told(tmp_path, scripts_dir):
    long_script = "".join(f"doc.add('Wall', 'W{n:03}')\n" for n in range(40))
    with running_server(tmp_path, keepalive_s=0.2, light_max_tokens=40, heavy_max_tokens=60) as server:
        alice = Client(server.url, server.token("alice"))
        host = TestHost(server.ws_url, alice.token).start()
        try:
            spec = write_script(scripts_dir / "cut.json", [automate(long_script), say("Shorter next time.")])
            session_id = alice.new_session(host.host_id, spec)
            stream = alice.run(session_id, "go")
            messages = session(alice, session_id)["messages"]
        finally:
            host.stop()
    assert stream.last["type"] == "Complete"
    assert stream.of("ToolCall") == [] and not any(m["type"] == "execute" for m in host.received)
    told = [e for e in messages if e["role"] == "user" and "cut off at the output limit" in str(e["content"])]
    assert len(told) == 1
    assert not any(p["type"] == "tool_call" for e in messages for p in e.get("content", []))
