"""The Anthropic adapter through the real SDK against the loopback replay server."""
from __future__ import annotations

import base64
import io
import json
import threading

import pytest
from PIL import Image

from cloud.contract import tool_definitions
from cloud.transcript import tool_result_part, tool_results, user_text
from cloud.vendors.anthropic import AnthropicModel
from cloud.vendors.base import ModelError, TurnRequest
from cloud.vendors.pricing import estimate_cost
from cloud.vendors.retry import RetryPolicy
from tests.vendors.adapters import anthropic_model, replay_fixtures
from tests.vendors.replay.anthropic import AnthropicReplay
from tests.vendors.replay.base import Turn, drain, image_part

SYSTEM = "You automate BIM authoring tools. " * 40
TOOLS = tool_definitions()
COLLECT = "execute_data_collection"


server, model = replay_fixtures(AnthropicReplay, anthropic_model)


def request(transcript, max_tokens=8192):
    return TurnRequest(SYSTEM, list(transcript), TOOLS, max_tokens, "session-1")


def run(model, transcript, **kwargs):
    return drain(model.stream(request(transcript, **kwargs), threading.Event()))


def assistant(model, turn):
    return {"role": "assistant", "model": model.spec, "content": turn.content}


def breakpoints(body):
    marked = []
    for i, tool in enumerate(body.get("tools", [])):
        if "cache_control" in tool:
            marked.append(("tool", i))
    for i, block in enumerate(body.get("system", [])):
        if "cache_control" in block:
            marked.append(("system", i))
    for m, message in enumerate(body["messages"]):
        for b, block in enumerate(message["content"]):
            if "cache_control" in block:
                marked.append(("message", m, b))
    return marked


def test_a_multi_turn_tool_run_streams_normalises_and_sends_state_back(server, model):
    server.enqueue(
        Turn([{"thinking": "Count the doors first.", "signature": "SIG-ONE"}, {"text": "Let me look."},
              {"tool_call": {"name": COLLECT, "input": {"code": "print(len(model.by_type('IfcDoor')))"}}}]),
        Turn([{"thinking": "Now the storey plan.", "signature": "SIG-TWO"},
              {"tool_call": {"name": "capture_view", "input": {"view": "Level 1"}}}]),
        Turn([{"text": "There are 12 doors, shown on Level 1."}]),
    )
    transcript = [user_text("How many doors are there?")]
    chunks, turn = run(model, transcript)
    assert [c.type for c in chunks][:3] == ["Thinking", "Thinking", "Thinking"]
    assert "".join(c.content for c in chunks if c.type == "Message") == "Let me look."
    assert turn.stop_reason == "tool_use" and turn.tool_calls[0]["input"]["code"].startswith("print(")
    assert turn.content[0]["vendor_state"] == {"vendor": "anthropic", "signature": "SIG-ONE"}
    first_call = turn.tool_calls[0]
    transcript += [assistant(model, turn), tool_results([tool_result_part(first_call["id"], COLLECT, "12")])]

    chunks, turn = run(model, transcript)
    view_call = turn.tool_calls[0]
    transcript += [assistant(model, turn), tool_results([
        tool_result_part(view_call["id"], "capture_view", "Level 1 plan", images=[image_part(3000, 1500)])])]
    chunks, turn = run(model, transcript)
    assert turn.stop_reason == "end_turn" and turn.text == "There are 12 doors, shown on Level 1."

    last = server.requests[-1].json
    roles = [m["role"] for m in last["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    first_assistant = last["messages"][1]["content"]
    assert first_assistant[0] == {"type": "thinking", "thinking": "Count the doors first.", "signature": "SIG-ONE"}
    assert [b["type"] for b in first_assistant] == ["thinking", "text", "tool_use"]
    assert first_assistant[2]["id"] == first_call["id"]
    assert last["messages"][2]["content"][0]["tool_use_id"] == first_call["id"]
    # The image rides inside the tool_result block, scaled to the vision ceiling.
    result = last["messages"][4]["content"][0]
    assert result["type"] == "tool_result" and [b["type"] for b in result["content"]] == ["text", "image"]
    raw = base64.b64decode(result["content"][1]["source"]["data"])
    with Image.open(io.BytesIO(raw)) as image:
        assert max(image.size) <= 1568 and image.size[0] * image.size[1] <= 1.15e6

    # Usage normalised per turn, and the second and third requests read the cached prefix.
    assert turn.usage.cache_read > 0 and turn.usage.output > 0
    assert turn.usage.cache_read + turn.usage.cache_write + turn.usage.uncached_input > 500
    assert estimate_cost(model.spec, turn.usage) > 0


def test_partial_tool_input_is_streamed_as_deltas_before_the_call(server, model):
    code = "for door in model.by_type('IfcDoor'):\n    print(door.Name, door.OverallWidth)\n"
    server.enqueue(Turn([{"tool_call": {"name": COLLECT, "input": {"code": code}, "id": "toolu_abc"}}],
                        piece_chars=10))
    chunks, turn = run(model, [user_text("List doors")])
    deltas = [c for c in chunks if c.type == "ToolInputDelta"]
    assert len(deltas) > 5
    assert all(d.metadata == {"tool_call_id": "toolu_abc", "name": COLLECT} for d in deltas)
    assert json.loads("".join(d.content for d in deltas)) == {"code": code}
    assert chunks[-1].type == "ToolCall" and chunks[-1].metadata["input"] == {"code": code}
    assert [c.type for c in chunks].index("ToolCall") == len(chunks) - 1


def test_redacted_thinking_goes_back_verbatim(server, model):
    server.enqueue(Turn([{"redacted_thinking": "ENCRYPTED-BLOB=="},
                         {"tool_call": {"name": COLLECT, "input": {"code": "print(1)"}}}]),
                   Turn([{"text": "ok"}]))
    _, turn = run(model, [user_text("go")])
    transcript = [user_text("go"), assistant(model, turn),
                  tool_results([tool_result_part(turn.tool_calls[0]["id"], COLLECT, "1")])]
    run(model, transcript)
    sent = server.requests[-1].json["messages"][1]["content"]
    assert sent[0] == {"type": "redacted_thinking", "data": "ENCRYPTED-BLOB=="}
    assert server.requests[-1].json["thinking"] == {"type": "adaptive", "display": "summarized"}


def test_cache_breakpoints_sit_on_tools_system_and_trailing_messages(server, model):
    server.default = Turn([{"text": "ok"}])
    transcript = [user_text("one")]
    for i in range(3):
        _, turn = run(model, transcript)
        transcript += [assistant(model, turn), user_text(f"next {i}")]
    for recorded in server.requests:
        marks = breakpoints(recorded.json)
        assert len(marks) <= 4
        messages = recorded.json["messages"]
        assert ("tool", len(TOOLS) - 1) in marks and ("system", 0) in marks
        assert ("message", len(messages) - 1, len(messages[-1]["content"]) - 1) in marks
    # Nothing above the breakpoints changes from one turn to the next.
    bodies = server.bodies()
    assert all(b["tools"] == bodies[0]["tools"] and b["system"] == bodies[0]["system"] for b in bodies)
    assert len(breakpoints(bodies[-1])) == 4


def test_a_vendor_switch_drops_foreign_state_and_keeps_the_conversation(server, model):
    transcript = [
        user_text("Renumber the doors"),
        {"role": "assistant", "model": "gemini:gemini-2.5-pro", "content": [
            {"type": "thinking", "text": "Plan it", "vendor_state": {"vendor": "gemini", "thought_signature": "c2ln"}},
            {"type": "thinking", "text": "", "vendor_state": {"vendor": "openai", "encrypted_content": "xyz"}},
            {"type": "text", "text": "Inspecting."},
            {"type": "tool_call", "id": "call:7/x", "name": COLLECT, "input": {"code": "print(2)"},
             "vendor_state": {"vendor": "gemini", "native_id": False, "thought_signature": "c2ln"}}]},
        tool_results([tool_result_part("call:7/x", COLLECT, "2 doors")]),
    ]
    server.enqueue(Turn([{"text": "Done."}]))
    _, turn = run(model, transcript)
    assert turn.text == "Done."
    body = server.requests[-1].json
    sent = json.dumps(body)
    assert "c2ln" not in sent and "xyz" not in sent and "Plan it" not in sent
    assistant_blocks = body["messages"][1]["content"]
    assert [b["type"] for b in assistant_blocks] == ["text", "tool_use"]
    assert assistant_blocks[1]["id"] == body["messages"][2]["content"][0]["tool_use_id"] == "call_7_x"
    # A tool loop opened by another vendor has no signed thinking: this request goes without thinking.
    assert "thinking" not in body


def test_a_transcript_from_the_scripted_model_converts_cleanly(server, model):
    transcript = [user_text("hi"), {"role": "assistant", "model": "scripted:/tmp/x.json", "content": [
        {"type": "thinking", "text": "scripted thought"}, {"type": "text", "text": "Hello"}]},
        user_text("Switch to Claude now")]
    server.enqueue(Turn([{"text": "Hi from Claude"}]))
    _, turn = run(model, transcript)
    body = server.requests[-1].json
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"] == [{"type": "text", "text": "Hello"}]
    assert body["thinking"]["type"] == "adaptive" and turn.text == "Hi from Claude"


def test_an_in_stream_overloaded_error_is_reported_as_529_when_retries_run_out(server, model):
    model.retry = RetryPolicy.fast(max_attempts=2)
    server.enqueue(*[Turn([{"text": "abcdefghijklmnop"}], fault="error_event", fault_after=1)] * 2)
    with pytest.raises(ModelError) as caught:
        run(model, [user_text("hi")])
    assert caught.value.vendor == "anthropic" and caught.value.status == 529


@pytest.mark.parametrize("raw", ['{"code": "print(1)', '{"code": print(1)}', '["not", "an object"]'])
def test_malformed_tool_json_becomes_a_call_with_input_error(server, model, raw):
    server.enqueue(Turn([{"tool_call": {"name": COLLECT, "raw_json": raw}}]))
    chunks, turn = run(model, [user_text("hi")])
    call = turn.tool_calls[0]
    assert call["input"] == {} and "not valid JSON" in call["input_error"]
    assert chunks[-1].type == "ToolCall" and chunks[-1].metadata["input_error"] == call["input_error"]
    assert turn.stop_reason == "tool_use"


def test_max_tokens_inside_a_call_is_reported_with_the_truncated_call(server, model):
    server.enqueue(Turn([{"tool_call": {"name": COLLECT, "raw_json": '{"code": "for x in'}}], stop="max_tokens"))
    _, turn = run(model, [user_text("hi")])
    assert turn.stop_reason == "max_tokens" and turn.tool_calls[0]["input_error"]


def test_pause_turn_is_continued_within_the_same_turn(server, model):
    server.enqueue(Turn([{"text": "Working on it. "}], stop="pause_turn"), Turn([{"text": "Finished."}]))
    chunks, turn = run(model, [user_text("hi")])
    assert turn.text == "Working on it. Finished." and turn.stop_reason == "end_turn"
    second = server.requests[1].json["messages"]
    assert second[-1] == {"role": "assistant", "content": [
        {"type": "text", "text": "Working on it. ", "cache_control": {"type": "ephemeral"}}]}


def test_a_refusal_ends_the_turn_without_tool_calls(server, model):
    server.enqueue(Turn([{"tool_call": {"name": COLLECT, "input": {"code": "x"}}}], stop="refusal"))
    chunks, turn = run(model, [user_text("hi")])
    assert turn.stop_reason == "refusal" and not turn.tool_calls and turn.text
    assert chunks[-1].type == "Message"


def test_older_models_get_a_thinking_budget_that_fits_the_output_budget(server):
    older = anthropic_model(server.url, "claude-haiku-4-5")
    server.enqueue(Turn([{"text": "ok"}]), Turn([{"text": "ok"}]))
    run(older, [user_text("hi")], max_tokens=8192)
    assert server.requests[-1].json["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    run(older, [user_text("hi")], max_tokens=1024)
    assert "thinking" not in server.requests[-1].json


def test_the_adapter_reports_its_image_ceiling_and_context_window(model):
    assert model.image_max_px == 1568 and model.context_window == 200_000 and model.spec == "anthropic:claude-sonnet-4-6"


def test_a_missing_key_is_a_model_error_naming_the_variable(monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ModelError) as caught:
        run(AnthropicModel("claude-sonnet-4-6"), [user_text("hi")])
    assert "ANTHROPIC_API_KEY" in str(caught.value)
