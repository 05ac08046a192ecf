"""The Gemini adapter through the real google-genai SDK against the loopback replay server."""
from __future__ import annotations

import base64
import io
import json
import threading

import pytest
from PIL import Image

from cloud.contract import tool_definitions
from cloud.transcript import tool_result_part, tool_results, user_text
from cloud.vendors.base import ModelError, TurnRequest
from cloud.vendors.gemini import GeminiModel, malformed_call_note
from cloud.vendors.pricing import estimate_cost
from cloud.vendors.retry import RetryPolicy
from tests.vendors.adapters import gemini_model, replay_fixtures
from tests.vendors.replay.base import Turn, drain, image_part
from tests.vendors.replay.gemini import GeminiReplay

SYSTEM = "You automate BIM authoring tools. " * 40
TOOLS = tool_definitions()
COLLECT = "execute_data_collection"


def b64bytes(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def field(obj: dict, camel: str):
    """google-genai writes some nested fields in snake_case (the API accepts both spellings)."""
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return obj[camel] if camel in obj else obj[snake]


server, model = replay_fixtures(GeminiReplay, gemini_model)


def run(model, transcript, max_tokens=8192):
    return drain(model.stream(TurnRequest(SYSTEM, list(transcript), TOOLS, max_tokens, "session-1"),
                              threading.Event()))


def assistant(model, turn):
    return {"role": "assistant", "model": model.spec, "content": turn.content}


def test_a_multi_turn_tool_run_keeps_thought_signatures_on_their_parts(server, model):
    server.enqueue(
        Turn([{"thinking": "Count the doors."}, {"text": "Let me look."},
              {"tool_call": {"name": COLLECT, "input": {"code": "print(12)"}}, "signature": "SIG-CALL-1"}]),
        Turn([{"tool_call": {"name": COLLECT, "input": {"code": "print(3)"}}, "signature": "SIG-CALL-2"}]),
        Turn([{"text": "There are 12 doors on 3 storeys.", "signature": "SIG-TEXT"}]),
    )
    transcript = [user_text("How many doors?")]
    chunks, turn = run(model, transcript)
    assert [c.type for c in chunks] == ["Thinking", "Thinking", "Message", "Message", "ToolInputDelta", "ToolCall"]
    assert turn.stop_reason == "tool_use"  # the replay ends tool calls with STOP, as Gemini does
    call = turn.tool_calls[0]
    assert call["input"] == {"code": "print(12)"} and call["id"].startswith("call_")
    assert b64bytes(call["vendor_state"]["thought_signature"]) == b"SIG-CALL-1"
    transcript += [assistant(model, turn), tool_results([tool_result_part(call["id"], COLLECT, "12")])]
    _, turn = run(model, transcript)
    transcript += [assistant(model, turn),
                   tool_results([tool_result_part(turn.tool_calls[0]["id"], COLLECT, "3")])]
    chunks, turn = run(model, transcript)
    assert turn.text == "There are 12 doors on 3 storeys." and turn.stop_reason == "end_turn"
    assert b64bytes(turn.content[-1]["vendor_state"]["thought_signature"]) == b"SIG-TEXT"

    contents = server.requests[-1].json["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user"]
    first_model = contents[1]["parts"]
    assert first_model[0] == {"text": "Let me look."}  # unsigned thought summaries are not sent back
    assert first_model[1]["functionCall"] == {"name": COLLECT, "args": {"code": "print(12)"}}
    assert b64bytes(first_model[1]["thoughtSignature"]) == b"SIG-CALL-1"
    assert b64bytes(contents[3]["parts"][0]["thoughtSignature"]) == b"SIG-CALL-2"
    response = contents[2]["parts"][0]["functionResponse"]
    assert response == {"name": COLLECT, "response": {"output": "12"}}  # minted ids are not sent to Gemini
    assert "functionDeclarations" in json.dumps(server.requests[-1].json["tools"])


def test_usage_counts_cached_prompt_tokens_once_and_thoughts_as_output(server, model):
    server.default = Turn([{"thinking": "t" * 40}, {"text": "x" * 80}])
    transcript = [user_text("hello")]
    _, first = run(model, transcript)
    transcript += [assistant(model, first), user_text("again")]
    _, second = run(model, transcript)
    assert first.usage.cache_read == 0 and second.usage.cache_read > 0
    assert second.usage.uncached_input > 0 and second.usage.cache_read > second.usage.uncached_input
    assert second.usage.reasoning == 10 and second.usage.output == 30
    assert estimate_cost(model.spec, second.usage) < estimate_cost(model.spec, first.usage) * 1.5


def test_a_native_call_id_goes_back_on_the_call_and_its_response(server, model):
    server.enqueue(Turn([{"tool_call": {"name": COLLECT, "input": {"code": "x"}, "id": "fc-42"}}]),
                   Turn([{"text": "ok"}]))
    chunks, turn = run(model, [user_text("go")])
    assert chunks[0].type == "ToolInputDelta" and json.loads(chunks[0].content) == {"code": "x"}
    assert chunks[0].metadata == {"tool_call_id": "fc-42", "name": COLLECT}
    transcript = [user_text("go"), assistant(model, turn), tool_results([tool_result_part("fc-42", COLLECT, "ok")])]
    run(model, transcript)
    contents = server.requests[-1].json["contents"]
    assert contents[1]["parts"][0]["functionCall"]["id"] == "fc-42"
    assert contents[2]["parts"][0]["functionResponse"]["id"] == "fc-42"


def _decoded_size(b64: str) -> tuple[int, int]:
    with Image.open(io.BytesIO(b64bytes(b64))) as image:
        return image.size


def _image_run(server, model):
    server.enqueue(Turn([{"tool_call": {"name": "capture_view", "input": {"view": "Level 1"}}}]), Turn([{"text": "ok"}]))
    _, turn = run(model, [user_text("show me")])
    call = turn.tool_calls[0]
    transcript = [user_text("show me"), assistant(model, turn), tool_results([
        tool_result_part(call["id"], "capture_view", "Level 1", images=[image_part(4000, 2000)])])]
    run(model, transcript)
    return server.requests[-1].json["contents"]


def test_gemini_3_gets_tool_images_inside_the_function_response(server):
    contents = _image_run(server, gemini_model(server.url, "gemini-3-pro-preview"))
    response = contents[2]["parts"][0]["functionResponse"]
    inline = field(response["parts"][0], "inlineData")
    assert field(inline, "mimeType") == "image/png" and _decoded_size(inline["data"]) == (3072, 1536)
    assert len(contents) == 3


def test_older_gemini_gets_tool_images_in_the_next_user_turn(server, model):
    contents = _image_run(server, model)
    assert "parts" not in contents[2]["parts"][0]["functionResponse"]
    follow = contents[3]
    assert follow["role"] == "user" and follow["parts"][0]["text"].startswith("Images returned")
    assert _decoded_size(field(follow["parts"][1], "inlineData")["data"]) == (3072, 1536)


def test_a_vendor_switch_drops_foreign_state(server, model):
    transcript = [
        user_text("Renumber the doors"),
        {"role": "assistant", "model": "anthropic:claude-sonnet-4-6", "content": [
            {"type": "thinking", "text": "Secret plan", "vendor_state": {"vendor": "anthropic", "signature": "ANT"}},
            {"type": "text", "text": "Inspecting."},
            {"type": "tool_call", "id": "toolu_1", "name": COLLECT, "input": {"code": "print(2)"}}]},
        tool_results([tool_result_part("toolu_1", COLLECT, "2 doors", is_error=True)]),
    ]
    server.enqueue(Turn([{"text": "Done."}]))
    _, turn = run(model, transcript)
    assert turn.text == "Done."
    contents = server.requests[-1].json["contents"]
    sent = json.dumps(contents)
    assert "ANT" not in sent and "Secret plan" not in sent and "thoughtSignature" not in sent
    assert contents[1]["parts"] == [{"text": "Inspecting."},
                                    {"functionCall": {"name": COLLECT, "args": {"code": "print(2)"}}}]
    assert contents[2]["parts"][0]["functionResponse"] == {"name": COLLECT, "response": {"error": "2 doors"}}


def test_gemini_3_marks_foreign_calls_of_the_current_tool_loop(server):
    model = gemini_model(server.url, "gemini-3-pro-preview")
    transcript = [user_text("go"), {"role": "assistant", "model": "scripted:x", "content": [
        {"type": "tool_call", "id": "call_1", "name": COLLECT, "input": {"code": "1"}},
        {"type": "tool_call", "id": "call_2", "name": COLLECT, "input": {"code": "2"}}]},
        tool_results([tool_result_part("call_1", COLLECT, "1"), tool_result_part("call_2", COLLECT, "2")])]
    server.enqueue(Turn([{"text": "ok"}]))
    run(model, transcript)
    parts = server.requests[-1].json["contents"][1]["parts"]
    assert parts[0]["thoughtSignature"] == "skip_thought_signature_validator"
    assert "thoughtSignature" not in parts[1]


def test_a_malformed_function_call_becomes_a_call_with_input_error(server, model):
    server.enqueue(Turn([], stop="MALFORMED_FUNCTION_CALL",
                        finish_message="Malformed function call: print(default_api.execute_data_collection(code=x'))"))
    chunks, turn = run(model, [user_text("hi")])
    call = turn.tool_calls[0]
    assert call["name"] in [t["name"] for t in TOOLS] and call["input"] == {} and "malformed" in call["input_error"]
    assert turn.stop_reason == "tool_use" and chunks[-1].metadata["input_error"] == call["input_error"]


def test_the_malformed_call_names_the_tool_its_finish_message_mentions():
    name, note = malformed_call_note("Malformed function call: print(default_api.execute_data_collection(code=x'))",
                                     [t["name"] for t in TOOLS])
    assert name == COLLECT and "execute_data_collection(code=x')" in note


def test_max_tokens_and_safety_stops_are_mapped(server, model):
    server.enqueue(Turn([{"text": "partial"}], stop="MAX_TOKENS"), Turn([{"text": ""}], stop="SAFETY"))
    _, turn = run(model, [user_text("hi")])
    assert turn.stop_reason == "max_tokens"
    chunks, turn = run(model, [user_text("hi")])
    assert turn.stop_reason == "refusal" and turn.text and chunks[-1].type == "Message"


def test_the_request_carries_system_tools_budget_and_thinking(server, model):
    server.enqueue(Turn([{"text": "ok"}]))
    run(model, [user_text("hi")], max_tokens=2000)
    recorded = server.requests[-1]
    body = recorded.json
    assert recorded.path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    assert recorded.headers["x-goog-api-key"] == "test-key"
    assert body["systemInstruction"]["parts"][0]["text"] == SYSTEM
    assert body["generationConfig"]["maxOutputTokens"] == 2000
    thinking = field(body["generationConfig"], "thinkingConfig")
    assert field(thinking, "includeThoughts") is True
    names = [d["name"] for d in body["tools"][0]["functionDeclarations"]]
    assert names == [t["name"] for t in TOOLS]


def test_the_adapter_reports_its_image_ceiling_and_context_window(model):
    assert model.image_max_px == 3072 and model.context_window == 1_048_576


def test_a_missing_key_is_a_model_error_naming_the_variable(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(ModelError) as caught:
        run(GeminiModel("gemini-2.5-pro"), [user_text("hi")])
    assert "GEMINI_API_KEY" in str(caught.value)


def test_switching_vendors_back_and_forth_within_one_tool_loop(server):
    """Claude starts a tool loop, Gemini continues it, Claude finishes: each gets its own state back."""
    import anthropic

    from cloud.vendors.anthropic import AnthropicModel
    from tests.vendors.replay.anthropic import AnthropicReplay

    gemini = gemini_model(server.url)
    with AnthropicReplay() as claude_server:
        claude = AnthropicModel("claude-sonnet-4-6", client=anthropic.Anthropic(
            api_key="k", base_url=claude_server.url, max_retries=0), retry=RetryPolicy.fast())
        claude_server.enqueue(
            Turn([{"thinking": "Doors first.", "signature": "CLAUDE-SIG"},
                  {"tool_call": {"name": COLLECT, "input": {"code": "print(1)"}}}]),
            Turn([{"text": "All done."}]))
        server.enqueue(Turn([{"tool_call": {"name": COLLECT, "input": {"code": "print(2)"}}, "signature": "GEM-SIG"}]))

        transcript = [user_text("Check the doors")]
        _, turn = run(claude, transcript)
        transcript += [assistant(claude, turn), tool_results([tool_result_part(turn.tool_calls[0]["id"], COLLECT, "1")])]
        _, turn = run(gemini, transcript)
        transcript += [assistant(gemini, turn), tool_results([tool_result_part(turn.tool_calls[0]["id"], COLLECT, "2")])]
        _, turn = run(claude, transcript)
        assert turn.text == "All done."

        to_gemini = json.dumps(server.requests[-1].json)
        assert "CLAUDE-SIG" not in to_gemini and "Doors first." not in to_gemini
        back_to_claude = claude_server.requests[-1].json
        first = back_to_claude["messages"][1]["content"][0]
        assert first == {"type": "thinking", "thinking": "Doors first.", "signature": "CLAUDE-SIG"}
        gemini_turn = back_to_claude["messages"][3]["content"]
        assert [b["type"] for b in gemini_turn] == ["tool_use"] and "GEM" not in json.dumps(gemini_turn)
        assert "thinking" not in back_to_claude  # the loop's latest call came from Gemini, unsigned for Claude
