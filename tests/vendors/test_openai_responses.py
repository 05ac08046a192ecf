"""The `openai:` adapter through the real openai SDK against the loopback Responses replay server."""
from __future__ import annotations

import base64
import io
import json
import threading

import openai
import pytest
from PIL import Image

from cloud.chunks import Chunk
from cloud.contract import tool_definitions
from cloud.transcript import tool_result_part, tool_results, user_text
from cloud.vendors import pricing, registry
from cloud.vendors.base import ModelError, ModelTurn, TurnRequest
from cloud.vendors.openai_responses import OpenAIResponsesModel
from tests.vendors.adapters import anthropic_model, gemini_model, replay_fixtures, responses_model
from tests.vendors.replay.anthropic import AnthropicReplay
from tests.vendors.replay.base import Turn, drain, image_part, tokens_of
from tests.vendors.replay.gemini import GeminiReplay
from tests.vendors.replay.openai_responses import OpenAIResponsesReplay, segments_of

SYSTEM = "You automate BIM authoring tools."
SESSION = "session-7f3a"
LOOK = {"name": "execute_data_collection", "input": {"code": "print(len(model.by_type('IfcDoor')))"}}
CAPTURE = {"name": "capture_view", "input": {"view": "Level 1"}}


server, model = replay_fixtures(OpenAIResponsesReplay, responses_model)


def run(model, transcript, max_tokens=2000, cancel=None) -> tuple[list[Chunk], ModelTurn]:
    request = TurnRequest(SYSTEM, transcript, tool_definitions(), max_tokens, SESSION)
    return drain(model.stream(request, cancel or threading.Event()))


def assistant(model, turn: ModelTurn) -> dict:
    return {"role": "assistant", "model": model.spec, "content": turn.content}


def image_size(data_url: str) -> tuple[int, int]:
    raw = base64.b64decode(data_url.split(",", 1)[1])
    with Image.open(io.BytesIO(raw)) as image:
        return image.size


def kinds(chunks: list[Chunk]) -> list[str]:
    return [c.type for c in chunks]


def test_multi_turn_tool_run_sends_history_back_in_responses_dialect(server, model):
    server.enqueue(
        Turn([{"thinking": "Count the doors first."}, {"text": "Let me count the doors."}, {"tool_call": LOOK}]),
        Turn([{"text": "There are 12 doors."}]),
    )
    chunks, first = run(model, [user_text("How many doors?")])
    assert kinds(chunks)[:2] == ["Thinking", "Thinking"]
    assert "".join(c.content for c in chunks if c.type == "Message") == "Let me count the doors."
    assert first.stop_reason == "tool_use"
    [call] = first.tool_calls
    assert call["name"] == LOOK["name"] and call["input"] == LOOK["input"]
    assert chunks[-1] == Chunk("ToolCall", call["name"], {"tool_call_id": call["id"], "name": call["name"],
                                                           "input": LOOK["input"]})

    transcript = [user_text("How many doors?"), assistant(model, first),
                  tool_results([tool_result_part(call["id"], call["name"], "12")])]
    chunks, second = run(model, transcript)
    assert second.text == "There are 12 doors." and second.stop_reason == "end_turn"

    body = server.requests[1].json
    assert server.requests[1].path == "/v1/responses"
    assert body["instructions"] == SYSTEM and body["stream"] is True and body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["prompt_cache_key"] == SESSION and body["max_output_tokens"] == 2000
    assert [t["name"] for t in body["tools"]] == [t["name"] for t in tool_definitions()]
    assert all(t["type"] == "function" and "parameters" in t for t in body["tools"])
    user, reasoning, message, function_call, output = body["input"]
    assert user == {"role": "user", "content": [{"type": "input_text", "text": "How many doors?"}]}
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"]
    assert message["role"] == "assistant" and message["content"][0]["text"] == "Let me count the doors."
    assert function_call == {"type": "function_call", "call_id": call["id"], "name": LOOK["name"],
                             "arguments": json.dumps(LOOK["input"])}
    assert output == {"type": "function_call_output", "call_id": call["id"], "output": "12"}


def test_reasoning_item_goes_back_exactly_as_received(server, model):
    server.enqueue(Turn([{"thinking": "Plan: inspect.", "signature": "gAAAAB-opaque-blob=="},
                         {"redacted_thinking": "gAAAAB-second-blob=="}, {"tool_call": LOOK}]),
                   Turn([{"text": "Done."}]))
    _, first = run(model, [user_text("Go")])
    received = json.loads(server.requests[0].body)  # nothing yet: the items come from the response
    assert "reasoning" not in [i.get("type") for i in received["input"]]
    thinking = [p for p in first.content if p["type"] == "thinking"]
    assert [p["text"] for p in thinking] == ["Plan: inspect.", ""]
    streamed = [p["vendor_state"]["item"] for p in thinking]
    assert streamed[0] == {"type": "reasoning", "id": "rs_0001_0", "encrypted_content": "gAAAAB-opaque-blob==",
                           "summary": [{"type": "summary_text", "text": "Plan: inspect."}]}

    call = first.tool_calls[0]
    run(model, [user_text("Go"), assistant(model, first), tool_results([tool_result_part(call["id"], call["name"], "ok")])])
    sent = [i for i in server.requests[1].json["input"] if i.get("type") == "reasoning"]
    assert sent == streamed
    assert sent[1]["encrypted_content"] == "gAAAAB-second-blob==" and sent[1]["summary"] == []


def test_function_call_arguments_stream_as_deltas_keyed_by_call_id(server, model):
    server.enqueue(Turn([{"tool_call": LOOK, "id": "call_look"}, {"tool_call": CAPTURE, "id": "call_view"}],
                        piece_chars=5))
    chunks, turn = run(model, [user_text("Look")])
    deltas = [c for c in chunks if c.type == "ToolInputDelta"]
    by_call = {}
    for c in deltas:
        by_call.setdefault(c.metadata["tool_call_id"], []).append(c.content)
    assert len(by_call["call_look"]) > 3
    assert json.loads("".join(by_call["call_look"])) == LOOK["input"]
    assert json.loads("".join(by_call["call_view"])) == CAPTURE["input"]
    assert {c.metadata["name"] for c in deltas if c.metadata["tool_call_id"] == "call_view"} == {"capture_view"}
    calls = [c for c in chunks if c.type == "ToolCall"]
    assert [c.metadata["tool_call_id"] for c in calls] == ["call_look", "call_view"]
    # Each ToolCall comes right after its own deltas, before the next call's.
    order = [(c.type, c.metadata["tool_call_id"]) for c in chunks]
    assert order.index(("ToolCall", "call_look")) < order.index(("ToolInputDelta", "call_view"))
    assert [c["id"] for c in turn.tool_calls] == ["call_look", "call_view"]


def test_switching_in_from_other_vendors_drops_their_opaque_state(server, model):
    server.enqueue(Turn([{"text": "Continuing."}]))
    transcript = [
        user_text("Renumber the doors."),
        {"role": "assistant", "model": "anthropic:claude-sonnet-4-5", "content": [
            {"type": "thinking", "text": "Doors first.", "vendor_state": {"vendor": "anthropic", "signature": "SIG"}},
            {"type": "thinking", "text": "", "vendor_state": {"vendor": "anthropic", "redacted": "REDACTED"}},
            {"type": "text", "text": "Looking."},
            {"type": "tool_call", "id": "toolu_01", "name": LOOK["name"], "input": LOOK["input"]}]},
        tool_results([tool_result_part("toolu_01", LOOK["name"], "12")]),
        {"role": "assistant", "model": "openai-compat:qwen3@http://127.0.0.1:1/v1", "content": [
            {"type": "thinking", "text": "local reasoning"},
            {"type": "tool_call", "id": "call_x", "name": CAPTURE["name"], "input": CAPTURE["input"],
             "vendor_state": {"vendor": "gemini", "thought_signature": "TS"}}]},
        tool_results([tool_result_part("call_x", CAPTURE["name"], "no image")]),
        user_text("Now summarise."),
    ]
    _, turn = run(model, transcript)
    assert turn.text == "Continuing."
    sent = server.requests[0].json["input"]
    assert [i.get("type", i.get("role")) for i in sent] == [
        "user", "message", "function_call", "function_call_output", "function_call", "function_call_output", "user"]
    raw = server.requests[0].body.decode()
    assert "SIG" not in raw and "REDACTED" not in raw and "TS" not in raw and "local reasoning" not in raw
    assert sent[2]["call_id"] == "toolu_01" and sent[3]["call_id"] == "toolu_01"


def test_trailing_reasoning_without_its_call_is_not_sent(server, model):
    server.enqueue(Turn([{"text": "ok"}]))
    state = {"vendor": "openai", "item": {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "E"}}
    transcript = [user_text("a"), {"role": "assistant", "model": model.spec, "content": [
        {"type": "thinking", "text": "", "vendor_state": state}]}, user_text("the call was cut off; again")]
    run(model, transcript)
    assert [i.get("role", i.get("type")) for i in server.requests[0].json["input"]] == ["user", "user"]


def test_tool_result_images_ride_inside_function_call_output_scaled_to_the_vision_ceiling(server, model):
    server.enqueue(Turn([{"text": "I see the plan."}]))
    big = image_part(3000, 1500)
    transcript = [
        {"role": "user", "content": [{"type": "text", "text": "Compare with this sketch:"}, image_part(400, 300)]},
        {"role": "assistant", "model": model.spec, "content": [
            {"type": "tool_call", "id": "call_v", "name": "capture_view", "input": {"view": "Level 1"}}]},
        tool_results([tool_result_part("call_v", "capture_view", "Level 1 plan", images=[big])]),
    ]
    run(model, transcript)
    user, _, output = server.requests[0].json["input"]
    assert user["content"][1]["type"] == "input_image"
    assert image_size(user["content"][1]["image_url"]) == (400, 300)
    assert output["type"] == "function_call_output" and output["call_id"] == "call_v"
    text, picture = output["output"]
    assert text == {"type": "input_text", "text": "Level 1 plan"}
    assert picture["type"] == "input_image" and picture["image_url"].startswith("data:image/png;base64,")
    width, height = image_size(picture["image_url"])
    assert max(width, height) <= 2048 and min(width, height) <= 768 and width / height == pytest.approx(2, rel=0.01)
    assert model.image_max_px == 2048


def test_usage_is_normalised_with_cached_tokens_and_priced(server, model):
    server.enqueue(Turn([{"thinking": "hmm"}, {"tool_call": LOOK}]), Turn([{"text": "12 doors."}]))
    _, first = run(model, [user_text("How many doors?")])
    call = first.tool_calls[0]
    _, second = run(model, [user_text("How many doors?"), assistant(model, first),
                            tool_results([tool_result_part(call["id"], call["name"], "12")])])
    assert first.usage.cache_read == 0 and first.usage.uncached_input > 0
    assert first.usage.reasoning > 0 and first.usage.output >= first.usage.reasoning
    # The second request repeats the first one's prefix (tools, instructions, first user message).
    assert second.usage.cache_read >= first.usage.total_input - 10
    billed = server.billed[-1]  # what went over the wire: cached tokens counted inside input_tokens
    assert billed["input_tokens"] == sum(tokens_of(s) for s in segments_of(server.requests[-1].json))
    assert second.usage.uncached_input + second.usage.cache_read == billed["input_tokens"]
    assert second.usage.cache_read == billed["input_tokens_details"]["cached_tokens"] > 0
    assert second.usage.output == billed["output_tokens"]
    price = pricing.price_for(model.spec)
    expected = (second.usage.uncached_input * price.input + second.usage.cache_read * price.cache_read
                + second.usage.output * price.output) / 1e6
    assert pricing.estimate_cost(model.spec, second.usage) == pytest.approx(expected)
    assert pricing.billed_input_cost(model.spec, second.usage) < pricing.uncached_input_cost(model.spec, second.usage)


@pytest.mark.parametrize("fault", ["error_event", "error_object", "failed"])
def test_a_non_retryable_mid_stream_error_fails_at_once(server, model, fault):
    server.error_code = "invalid_prompt"
    server.enqueue(Turn([{"text": "partial text here"}], fault=fault, fault_after=1))
    with pytest.raises(ModelError) as caught:
        run(model, [user_text("hi")])
    assert "invalid_prompt" in str(caught.value) and len(server.requests) == 1


def test_malformed_tool_json_becomes_a_call_with_input_error_and_goes_back_verbatim(server, model):
    bad = '{"code": "print(1)", }'
    server.enqueue(Turn([{"tool_call": {"name": LOOK["name"], "raw_json": bad}, "id": "call_bad"}]),
                   Turn([{"text": "Sorry, fixed."}]))
    chunks, turn = run(model, [user_text("hi")])
    [call] = turn.tool_calls
    assert call["input"] == {} and "not valid JSON" in call["input_error"]
    assert chunks[-1].metadata["input_error"] == call["input_error"]
    run(model, [user_text("hi"), assistant(model, turn),
                tool_results([tool_result_part("call_bad", LOOK["name"], call["input_error"], is_error=True)])])
    sent = [i for i in server.requests[1].json["input"] if i.get("type") == "function_call"]
    assert sent[0]["arguments"] == bad


def test_incomplete_at_max_output_tokens_stops_with_max_tokens_and_flags_the_cut_call(server, model):
    server.enqueue(Turn([{"text": "Writing the script"}, {"tool_call": {"name": LOOK["name"], "raw_json": '{"code": "pri'}}],
                        stop="max_output_tokens"))
    _, turn = run(model, [user_text("hi")], max_tokens=30)
    assert turn.stop_reason == "max_tokens"
    assert turn.tool_calls[0]["input_error"].startswith("The call was cut off")
    assert server.requests[0].json["max_output_tokens"] == 30


def test_non_reasoning_models_are_not_asked_for_reasoning(server):
    client = openai.OpenAI(api_key="k", base_url=server.url + "/v1", max_retries=0)
    server.enqueue(Turn([{"text": "hi"}]))
    run(OpenAIResponsesModel("gpt-4.1", client=client), [user_text("hi")])
    body = server.requests[0].json
    assert "reasoning" not in body and "include" not in body and body["prompt_cache_key"] == SESSION


def test_created_from_the_environment_through_the_registry(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    assert "openai" in registry.configured_vendors()
    adapter = registry.create_model("openai:gpt-5.1")
    assert (adapter.spec, adapter.vendor, adapter.context_window) == ("openai:gpt-5.1", "openai", 400_000)
    server.enqueue(Turn([{"text": "hello"}]))
    _, turn = run(adapter, [user_text("hi")])
    assert turn.text == "hello"
    assert server.requests[0].headers["authorization"] == "Bearer sk-env-key"
    monkeypatch.delenv("OPENAI_API_KEY")
    assert "openai" not in registry.configured_vendors()


def test_switching_out_to_anthropic_and_gemini_leaves_openai_state_behind(server, model):
    server.enqueue(Turn([{"thinking": "Plan.", "signature": "OPENAI-ENCRYPTED-REASONING"}, {"text": "Looking."},
                         {"tool_call": LOOK, "id": "call_from_openai"}]))
    _, turn = run(model, [user_text("How many doors?")])
    transcript = [user_text("How many doors?"), assistant(model, turn),
                  tool_results([tool_result_part("call_from_openai", LOOK["name"], "12 doors")]),
                  user_text("Thanks. Summarise.")]
    with AnthropicReplay() as claude_server, GeminiReplay() as gemini_server:
        others = [anthropic_model(claude_server.url, key="k"), gemini_model(gemini_server.url, key="k")]
        for replay, other in zip((claude_server, gemini_server), others, strict=True):
            replay.enqueue(Turn([{"text": "Twelve doors."}]))
            _, answer = run(other, transcript)
            assert answer.text == "Twelve doors."
            sent = replay.requests[0].body.decode()
            assert "OPENAI-ENCRYPTED-REASONING" not in sent and "rs_0001" not in sent
            assert "12 doors" in sent and "Looking." in sent and "by_type('IfcDoor')" in sent


def test_message_phase_and_later_summary_parts_are_kept(server, model):
    def with_phase_and_two_summaries(request):
        reply = server.render_turn(request, Turn([{"thinking": "First idea."}, {"text": "Checking."},
                                                  {"tool_call": LOOK, "id": "call_p"}]))
        frames = []
        for frame in reply.frames:
            frame = frame.replace(b'"type":"message","status":"completed"',
                                  b'"type":"message","phase":"commentary","status":"completed"')
            frames.append(frame)
            if b"response.reasoning_summary_part.done" in frame:
                second = {"type": "response.reasoning_summary_text.delta", "item_id": "rs_0001_0", "output_index": 0,
                          "summary_index": 1, "delta": "Second idea.", "sequence_number": 999}
                frames.append(f"event: {second['type']}\ndata: {json.dumps(second)}\n\n".encode())
        reply.frames = frames
        return reply

    server.enqueue(with_phase_and_two_summaries, Turn([{"text": "ok"}]))
    _, turn = run(model, [user_text("go")])
    thinking, text, call = turn.content
    assert thinking["text"] == "First idea.\n\nSecond idea."
    assert text["vendor_state"] == {"vendor": "openai", "phase": "commentary"}
    run(model, [user_text("go"), assistant(model, turn), tool_results([tool_result_part("call_p", LOOK["name"], "1")])])
    message = [i for i in server.requests[1].json["input"] if i.get("type") == "message"][0]
    assert message["phase"] == "commentary" and message["content"] == [{"type": "output_text", "text": "Checking."}]
