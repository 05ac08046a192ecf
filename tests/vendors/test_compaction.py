"""Compaction: summarising older turns near the context window, through the same adapter."""
from __future__ import annotations

import json
import threading

import pytest

from cloud.compaction import PROMPT_PATH, choose_cut, maybe_compact
from cloud.contract import tool_definitions
from cloud.transcript import model_view, tool_result_part, tool_results, user_text
from cloud.vendors.anthropic import AnthropicModel
from cloud.vendors.base import ModelError, TurnRequest
from cloud.vendors.scripted import ScriptedModel
from tests.vendors.adapters import anthropic_model, replay_fixtures
from tests.vendors.replay.anthropic import AnthropicReplay
from tests.vendors.replay.base import HttpError, Turn, drain

SYSTEM = "You automate BIM authoring tools."
TOOLS = tool_definitions()
SUMMARY = ("## User goal and context\nRenumber doors.\n## Done\nListed 12 doors.\n"
           "## Pending\nRenumber them.\n## Current script state\nNone.")


def _small_window(url: str) -> AnthropicModel:
    adapter = anthropic_model(url)
    adapter.context_window = 4000
    return adapter


server, model = replay_fixtures(AnthropicReplay, _small_window)


def conversation(spec: str, steps: int, output_chars: int = 600) -> list[dict]:
    transcript = [user_text("Renumber every door on level 3 by room.")]
    for i in range(steps):
        call_id = f"call_{i}"
        code = f"for d in model.by_type('IfcDoor'):\n    print({i}, d.Name)\n"
        transcript.append({"role": "assistant", "model": spec, "content": [
            {"type": "text", "text": f"Step {i}: inspecting."},
            {"type": "tool_call", "id": call_id, "name": "execute_task_automation", "input": {"code": code}}]})
        transcript.append(tool_results([tool_result_part(call_id, "execute_task_automation", "D-1\n" * (output_chars // 4))]))
    return transcript


def compact(transcript, model, **kwargs):
    return drain(maybe_compact(transcript, model, SYSTEM, TOOLS, "session-1", threading.Event(), **kwargs))


def assert_pairs_intact(view):
    for i, entry in enumerate(view):
        if entry["role"] == "tool":
            previous = view[i - 1]
            assert previous["role"] == "assistant"
            called = {p["id"] for p in previous["content"] if p["type"] == "tool_call"}
            assert {p["tool_call_id"] for p in entry["content"]} <= called


def test_a_small_context_is_left_alone(server, model):
    chunks, result = compact(conversation(model.spec, 2, 100), model)
    assert result is None and chunks == [] and server.requests == []


def test_near_the_window_older_turns_are_summarised_through_the_same_adapter(server, model):
    server.enqueue(Turn([{"text": SUMMARY}]))
    transcript = conversation(model.spec, 12)
    chunks, result = compact(transcript, model)

    assert result[:len(transcript)] == transcript  # history is kept, untouched
    marker = result[len(transcript)]
    assert marker["role"] == "compaction" and marker["summary"] == SUMMARY and marker["model"] == model.spec
    assert marker["usage"]["output"] > 0 and 2 <= marker["replaced"] < len(transcript)
    view = model_view(result)
    assert view[0]["role"] == "user" and SUMMARY in view[0]["content"][0]["text"]
    assert view[1]["role"] == "assistant" and len(view) < len(transcript)
    assert_pairs_intact(view)
    assert (chunks[0].type, chunks[0].metadata["kind"], chunks[0].content) == ("Metadata", "compaction",
                                                                               "Context summarised")
    assert chunks[0].metadata["tokens_after"] < chunks[0].metadata["tokens_before"]

    sent = server.requests[0].json
    assert sent["system"][0]["text"] == SYSTEM and len(sent["tools"]) == len(TOOLS)
    assert sent["messages"][-1]["content"][-1]["text"] == PROMPT_PATH.read_text()
    assert "Step 0" in json.dumps(sent["messages"]) and "Step 11" not in json.dumps(sent["messages"])

    # The compacted view is now well under the threshold: no compaction on the next check.
    again, second = compact(result, model)
    assert second is None and len(server.requests) == 1


def test_reported_usage_triggers_compaction_even_when_the_text_looks_small(server, model):
    server.enqueue(Turn([{"text": SUMMARY}]))
    transcript = conversation(model.spec, 4, 40)
    assert compact(transcript, model)[1] is None
    transcript[-2]["usage"] = {"uncached_input": 3500, "cache_read": 0, "cache_write": 0, "output": 20}
    _, result = compact(transcript, model)
    assert result is not None and result[len(transcript)]["role"] == "compaction"
    assert all("usage" not in e for e in result[len(transcript) + 1:])  # stale sizes are not carried over


def test_a_second_compaction_summarises_the_first_summary_too(server, model):
    server.enqueue(Turn([{"text": SUMMARY}]), Turn([{"text": SUMMARY.replace("12 doors", "12 doors, renamed 6")}]))
    transcript = conversation(model.spec, 12)
    _, once = compact(transcript, model)
    grown = once + conversation(model.spec, 12)[1:]
    _, twice = compact(grown, model)
    assert [e["role"] for e in twice].count("compaction") == 2
    assert SUMMARY in server.requests[1].json["messages"][0]["content"][0]["text"]
    assert "renamed 6" in model_view(twice)[0]["content"][0]["text"]
    assert_pairs_intact(model_view(twice))


@pytest.mark.parametrize("keep", [0.0, 0.1, 0.3, 0.6, 1.0])
def test_the_cut_never_separates_a_tool_call_from_its_result(keep):
    transcript = conversation("anthropic:x", 8)
    transcript.insert(9, user_text("Also check the windows"))
    cut = choose_cut(transcript, 0, int(keep * 4000))
    if cut is None:
        return
    assert transcript[cut]["role"] in ("user", "assistant")
    assert_pairs_intact(model_view([*transcript, {"role": "compaction", "summary": "s"}, *transcript[cut:]]))


def test_a_model_that_calls_a_tool_instead_gets_a_mechanical_summary(server, model):
    server.enqueue(Turn([{"tool_call": {"name": "execute_data_collection", "input": {"code": "print(1)"}}}]))
    _, result = compact(conversation(model.spec, 12), model)
    summary = next(e for e in result if e["role"] == "compaction")["summary"]
    for section in ("## User goal and context", "## Done", "## Pending", "## Current script state"):
        assert section in summary
    assert "Renumber every door on level 3" in summary and "model.by_type('IfcDoor')" in summary


def test_the_scripted_model_is_compacted_without_being_asked(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [[{"text": "hi"}]]}))
    scripted = ScriptedModel(str(script))
    scripted.context_window = 4000
    transcript = conversation(scripted.spec, 12)
    chunks, result = compact(transcript, scripted)
    marker = result[len(transcript)]
    assert marker["summary"].startswith("## User goal and context") and marker["usage"]["output"] == 0
    assert set(marker) == {"role", "summary", "replaced", "model", "usage", "kept"}  # nothing model-specific
    assert chunks[0].metadata["kind"] == "compaction"


def _play(model, transcript):
    return drain(model.stream(TurnRequest(SYSTEM, model_view(transcript), TOOLS, 8000, "s"), threading.Event()))[1]


@pytest.mark.parametrize("user_between", [False, True])
def test_the_scripted_model_keeps_its_place_across_any_number_of_compactions(user_between):
    turns = [[{"text": f"turn {i}"}, {"tool_call": {"name": "execute_data_collection", "input": {"code": f"print({i})"}}}]
             for i in range(14)] + [[{"text": "done"}]]
    model = ScriptedModel.from_turns(turns, name="long")
    model.context_window = 3000
    transcript, played, compactions = [user_text("Renumber the doors.")], [], 0
    while True:
        _, compacted = compact(transcript, model)
        if compacted is not None:
            transcript, compactions = compacted, compactions + 1
        turn = _play(model, transcript)
        played.append(turn.text)
        transcript.append({"role": "assistant", "model": model.spec, "content": turn.content})
        if not turn.tool_calls:
            break
        call = turn.tool_calls[0]
        transcript.append(tool_results([tool_result_part(call["id"], call["name"], "D-1\n" * 200)]))
        if user_between:
            transcript.append(user_text("Go on."))
    assert played == [f"turn {i}" for i in range(14)] + ["done"]
    assert compactions >= 3


def _automation(i, arguments):
    return [{"role": "assistant", "model": "scripted:x", "content": [
                {"type": "tool_call", "id": f"c{i}", "name": "execute_task_automation", "input": arguments}]},
            tool_results([tool_result_part(f"c{i}", "execute_task_automation", "ok " + "x" * 4000)])]


def test_the_fallback_summary_carries_the_current_script_with_edits_merged_across_compactions():
    model = ScriptedModel.from_turns([], name="x")
    model.context_window = 3000
    original = "doors = model.by_type('IfcDoor')\nfor d in doors:\n    d.Name = 'A'\n"
    transcript = [user_text("Rename the doors."), *_automation(0, {"code": original}),
                  user_text("Use B instead."), *_automation(1, {"code": original}), user_text("more")]
    _, transcript = compact(transcript, model)
    assert "d.Name = 'A'" in [e for e in transcript if e["role"] == "compaction"][-1]["summary"]
    transcript += [*_automation(2, {"edits": [{"old": "    d.Name = 'A'", "new": "    d.Name = 'B'"}]}),
                   user_text("and C"), *_automation(3, {"edits": [{"old": "'B'", "new": "'C'"}]}), user_text("ok")]
    _, twice = compact(transcript, model)
    marker = [e for e in twice if e["role"] == "compaction"][-1]
    assert "d.Name = 'C'" in marker["summary"] and "d.Name = 'A'" not in marker["summary"]
    _, told = compact(transcript, model, current_script="print('from the session')")
    assert "print('from the session')" in [e for e in told if e["role"] == "compaction"][-1]["summary"]


def test_a_failed_summarisation_call_is_reported(server, model):
    server.enqueue(HttpError(400, "prompt is too long"))
    with pytest.raises(ModelError) as caught:
        compact(conversation(model.spec, 12), model)
    assert caught.value.status == 400
