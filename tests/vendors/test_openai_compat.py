"""The `openai-compat:` adapter through the real openai SDK against the loopback Chat Completions replay server."""
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
from cloud.vendors import compat_endpoints, registry
from cloud.vendors.base import ModelError, ModelTurn, TurnRequest
from cloud.vendors.compat_endpoints import ENDPOINTS_ENV, split_model
from cloud.vendors.openai_compat import OpenAICompatModel
from cloud.vendors.openai_responses import OpenAIResponsesModel
from cloud.vendors.retry import RetryPolicy
from tests.vendors.replay.base import HttpError, Turn, drain, image_part, tokens_of
from tests.vendors.replay.chat_completions import ChatCompletionsReplay, segments_of
from tests.vendors.replay.openai_responses import OpenAIResponsesReplay

SYSTEM = "You automate BIM authoring tools."
SESSION = "session-local-1"
LOOK = {"name": "execute_data_collection", "input": {"code": "print(len(model.by_type('IfcWall')))"}}
CAPTURE = {"name": "capture_view", "input": {"view": "Level 2", "element_ids": [101, 102]}}


@pytest.fixture
def allow(monkeypatch):
    """Add a replay server to the server's allow-list of endpoints, under `name`."""
    allowed: dict[str, str] = {}

    def add(server, name: str = "replay") -> str:
        allowed[name] = f"{server.url}/v1"
        monkeypatch.setenv(ENDPOINTS_ENV, ",".join(f"{k}={v}" for k, v in allowed.items()))
        return name
    monkeypatch.delenv("OPENAI_COMPAT_BASE_URL", raising=False)
    return add


@pytest.fixture
def server(allow):
    with ChatCompletionsReplay() as replay:
        allow(replay)
        yield replay


@pytest.fixture
def model(server):
    return OpenAICompatModel("qwen3-coder@replay", policy=RetryPolicy.fast())


def run(model, transcript, max_tokens=2000, tools=None) -> tuple[list[Chunk], ModelTurn]:
    request = TurnRequest(SYSTEM, transcript, tool_definitions() if tools is None else tools, max_tokens, SESSION)
    return drain(model.stream(request, threading.Event()))


def assistant(model, turn: ModelTurn) -> dict:
    return {"role": "assistant", "model": model.spec, "content": turn.content}


def image_size(data_url: str) -> tuple[int, int]:
    with Image.open(io.BytesIO(base64.b64decode(data_url.split(",", 1)[1]))) as image:
        return image.size


def kinds(chunks: list[Chunk]) -> list[str]:
    return [c.type for c in chunks]


def test_spec_names_model_and_an_endpoint_by_name_or_url():
    assert split_model("qwen3-coder@http://127.0.0.1:11434/v1") == ("qwen3-coder", "http://127.0.0.1:11434/v1")
    assert split_model("org/model:7b@https://vllm.internal/v1") == ("org/model:7b", "https://vllm.internal/v1")
    assert split_model("m@https://user:pw@vllm.internal/v1") == ("m", "https://user:pw@vllm.internal/v1")
    assert split_model("qwen3-coder@local") == ("qwen3-coder", "local")
    assert split_model("qwen3-coder") == ("qwen3-coder", None)
    with pytest.raises(registry.ModelSpecError):
        split_model("@local")


def test_multi_turn_tool_run_with_streamed_fragments(server, model):
    server.enqueue(
        Turn([{"thinking": "Walls first."}, {"text": "Counting walls."}, {"tool_call": LOOK, "id": "call_a"},
              {"tool_call": CAPTURE, "id": "call_b"}], piece_chars=6),
        Turn([{"text": "There are 40 walls."}]),
    )
    chunks, first = run(model, [user_text("How many walls?")])
    assert kinds(chunks)[0] == "Thinking" and "Message" in kinds(chunks)
    assert first.stop_reason == "tool_use"
    assert [(c["id"], c["name"], c["input"]) for c in first.tool_calls] == [
        ("call_a", LOOK["name"], LOOK["input"]), ("call_b", CAPTURE["name"], CAPTURE["input"])]
    deltas = [c for c in chunks if c.type == "ToolInputDelta"]
    for call_id, call in (("call_a", LOOK), ("call_b", CAPTURE)):
        mine = [c for c in deltas if c.metadata["tool_call_id"] == call_id]
        assert len(mine) > 2 and {c.metadata["name"] for c in mine} == {call["name"]}
        assert json.loads("".join(c.content for c in mine)) == call["input"]
    assert [c.metadata["tool_call_id"] for c in chunks if c.type == "ToolCall"] == ["call_a", "call_b"]

    transcript = [user_text("How many walls?"), assistant(model, first),
                  tool_results([tool_result_part("call_a", LOOK["name"], "40"),
                                tool_result_part("call_b", CAPTURE["name"], "rendered")])]
    _, second = run(model, transcript)
    assert second.text == "There are 40 walls." and second.stop_reason == "end_turn"

    body = server.requests[1].json
    assert server.requests[1].path == "/v1/chat/completions"
    assert body["model"] == "qwen3-coder" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True} and body["max_tokens"] == 2000
    assert [t["function"]["name"] for t in body["tools"]] == [t["name"] for t in tool_definitions()]
    system, user, reply, result_a, result_b = body["messages"]
    assert system == {"role": "system", "content": SYSTEM}
    assert user == {"role": "user", "content": "How many walls?"}
    assert reply["role"] == "assistant" and reply["content"] == "Counting walls."
    assert "Walls first." not in json.dumps(body)  # reasoning is not sent back to these servers
    assert reply["tool_calls"] == [
        {"id": "call_a", "type": "function", "function": {"name": LOOK["name"], "arguments": json.dumps(LOOK["input"])}},
        {"id": "call_b", "type": "function",
         "function": {"name": CAPTURE["name"], "arguments": json.dumps(CAPTURE["input"])}}]
    assert result_a == {"role": "tool", "tool_call_id": "call_a", "content": "40"}
    assert result_b == {"role": "tool", "tool_call_id": "call_b", "content": "rendered"}


def test_ollama_style_whole_calls_still_produce_deltas_and_calls(allow):
    with ChatCompletionsReplay(whole_tool_calls=True) as server:
        model = OpenAICompatModel(f"llama3.1@{allow(server, 'ollama')}", policy=RetryPolicy.fast())
        server.enqueue(Turn([{"tool_call": LOOK, "id": "call_1"}, {"tool_call": CAPTURE, "id": "call_2"}]))
        chunks, turn = run(model, [user_text("go")])
    assert kinds(chunks) == ["ToolInputDelta", "ToolInputDelta", "ToolCall", "ToolCall"]
    assert json.loads(chunks[0].content) == LOOK["input"] and chunks[1].metadata["tool_call_id"] == "call_2"
    assert [c["input"] for c in turn.tool_calls] == [LOOK["input"], CAPTURE["input"]]


def test_calls_repeating_index_zero_with_new_ids_stay_separate(allow):
    with ChatCompletionsReplay(whole_tool_calls=True) as server:
        model = OpenAICompatModel(f"m@{allow(server, 'vllm')}", policy=RetryPolicy.fast())

        def every_call_at_index_zero(request):
            reply = server.render_turn(request, Turn([{"tool_call": LOOK, "id": "c1"}, {"tool_call": CAPTURE, "id": "c2"}]))
            reply.frames = [f.replace(b'"index":1', b'"index":0') for f in reply.frames]
            return reply

        server.enqueue(every_call_at_index_zero)
        _, turn = run(model, [user_text("go")])
    assert [(c["id"], c["input"]) for c in turn.tool_calls] == [("c1", LOOK["input"]), ("c2", CAPTURE["input"])]


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content"])
def test_reasoning_from_either_extra_field_becomes_thinking(field, allow):
    with ChatCompletionsReplay(reasoning_field=field) as server:
        model = OpenAICompatModel(f"m@{allow(server, 'llamacpp')}", policy=RetryPolicy.fast())
        server.enqueue(Turn([{"thinking": "Considering the storeys."}, {"text": "Two storeys."}]))
        chunks, turn = run(model, [user_text("go")])
    assert "".join(c.content for c in chunks if c.type == "Thinking") == "Considering the storeys."
    assert turn.content == [{"type": "thinking", "text": "Considering the storeys."},
                            {"type": "text", "text": "Two storeys."}]


def test_tool_result_images_follow_in_a_user_message_scaled_for_local_models(server, model):
    server.enqueue(Turn([{"text": "I see it."}]))
    transcript = [
        user_text("Show me level 2."),
        {"role": "assistant", "model": model.spec, "content": [
            {"type": "tool_call", "id": "call_v", "name": "capture_view", "input": {"view": "Level 2"}}]},
        tool_results([tool_result_part("call_v", "capture_view", "Level 2 plan", images=[image_part(2400, 1800)])]),
        user_text("What do you see?"),
    ]
    run(model, transcript)
    messages = server.requests[0].json["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    tool, follow = messages[3], messages[4]
    assert isinstance(tool["content"], str) and tool["content"].startswith("Level 2 plan")
    assert "image_url" not in json.dumps(tool)
    label, picture, question = follow["content"]
    assert "call_v" in label["text"] and question == {"type": "text", "text": "What do you see?"}
    width, height = image_size(picture["image_url"]["url"])
    assert max(width, height) <= 1024 and width * height <= 1_000_000 and model.image_max_px == 1024


def test_switching_vendors_both_ways_with_openai_responses(server, model):
    with OpenAIResponsesReplay() as responses_server:
        client = openai.OpenAI(api_key="k", base_url=responses_server.url + "/v1", max_retries=0)
        cloud = OpenAIResponsesModel("gpt-5.1", client=client, policy=RetryPolicy.fast())
        responses_server.enqueue(Turn([{"thinking": "Plan.", "signature": "ENCRYPTED-REASONING"},
                                       {"tool_call": LOOK, "id": "call_cloud"}]),
                                 Turn([{"text": "Back on OpenAI."}]))
        server.enqueue(Turn([{"thinking": "local thoughts"}, {"tool_call": CAPTURE, "id": "call_local"}]))

        transcript = [user_text("Count walls, then show level 2.")]
        _, turn = run(cloud, transcript)
        transcript += [assistant(cloud, turn), tool_results([tool_result_part("call_cloud", LOOK["name"], "40")])]
        _, turn = run(model, transcript)  # OpenAI -> local
        transcript += [assistant(model, turn), tool_results([tool_result_part("call_local", CAPTURE["name"], "ok")])]
        _, turn = run(cloud, transcript)  # local -> OpenAI
        assert turn.text == "Back on OpenAI."

    local_body = server.requests[0].body.decode()
    assert "ENCRYPTED-REASONING" not in local_body and "Plan." not in local_body
    assert [m["role"] for m in server.requests[0].json["messages"]] == ["system", "user", "assistant", "tool"]
    back = responses_server.requests[1].json["input"]
    assert [i.get("type", i.get("role")) for i in back] == [
        "user", "reasoning", "function_call", "function_call_output", "function_call", "function_call_output"]
    assert back[1]["encrypted_content"] == "ENCRYPTED-REASONING"  # its own state still goes back
    assert "local thoughts" not in responses_server.requests[1].body.decode()


def test_stop_with_tool_calls_is_still_a_tool_turn_and_length_is_max_tokens(server, model):
    server.enqueue(Turn([{"tool_call": LOOK}], stop="stop"),
                   Turn([{"text": "This answer was cut"}], stop="length"))
    _, turn = run(model, [user_text("a")])
    assert turn.stop_reason == "tool_use"
    _, turn = run(model, [user_text("b")], max_tokens=5)
    assert turn.stop_reason == "max_tokens" and server.requests[1].json["max_tokens"] == 5


def test_usage_comes_from_the_final_chunk_with_cached_tokens_normalised(server, model):
    server.enqueue(Turn([{"text": "one"}]), Turn([{"text": "two"}]))
    _, first = run(model, [user_text("first question")])
    _, second = run(model, [user_text("first question"), assistant(model, first), user_text("and then?")])
    total = sum(tokens_of(s) for s in segments_of(server.requests[1].json))
    assert first.usage.cache_read == 0
    assert second.usage.cache_read > 0
    assert second.usage.uncached_input + second.usage.cache_read == total
    assert second.usage.output == 1 and second.usage.cache_write == 0


def test_no_tools_means_no_tools_field(server, model):
    server.enqueue(Turn([{"text": "summary"}]))
    run(model, [user_text("summarise")], tools=())
    assert "tools" not in server.requests[0].json


def test_exhausted_retries_name_the_endpoint_and_status_not_its_text(server, model):
    server.enqueue(*[HttpError(503, "model is loading", retry_after=0.02)] * 4)
    with pytest.raises(ModelError) as caught:
        run(model, [user_text("hi")])
    assert (caught.value.vendor, caught.value.status, caught.value.retry_after) == ("openai-compat", 503, 0.02)
    assert "'replay'" in str(caught.value) and "server error" in str(caught.value)


def test_the_endpoints_own_error_text_is_logged_not_returned(server, model, caplog):
    server.enqueue(HttpError(404, "no such model; internal admin panel at 10.0.0.7"))
    with pytest.raises(ModelError) as caught:
        run(model, [user_text("hi")])
    assert "10.0.0.7" not in str(caught.value) and "HTTP 404" in str(caught.value)
    assert "10.0.0.7" in caplog.text


def test_a_non_retryable_mid_stream_error_fails_at_once(server, model):
    server.error_body = {"message": "tool grammar not supported", "type": "BadRequestError", "code": 400}
    server.enqueue(Turn([{"text": "partial"}], fault="error_event", fault_after=1))
    with pytest.raises(ModelError) as caught:
        run(model, [user_text("hi")])
    assert len(server.requests) == 1 and "during the stream" in str(caught.value)
    assert "tool grammar not supported" not in str(caught.value)


def test_malformed_tool_json_is_a_call_with_input_error_sent_back_verbatim(server, model):
    bad = "{'code': 'print(1)'}"
    server.enqueue(Turn([{"tool_call": {"name": LOOK["name"], "raw_json": bad}, "id": "call_bad"}]),
                   Turn([{"text": "fixed"}]))
    chunks, turn = run(model, [user_text("hi")])
    [call] = turn.tool_calls
    assert call["input"] == {} and "not valid JSON" in call["input_error"]
    assert chunks[-1].type == "ToolCall" and chunks[-1].metadata["input_error"] == call["input_error"]
    run(model, [user_text("hi"), assistant(model, turn),
                tool_results([tool_result_part("call_bad", LOOK["name"], call["input_error"], is_error=True)])])
    assert server.requests[1].json["messages"][2]["tool_calls"][0]["function"]["arguments"] == bad


def test_the_key_goes_to_configured_endpoints_only(server, allow, monkeypatch):
    monkeypatch.delenv("OPENAI_COMPAT_API_KEY", raising=False)
    server.default = Turn([{"text": "hi"}])
    run(registry.create_model("openai-compat:m@replay"), [user_text("a")])
    monkeypatch.setenv("OPENAI_COMPAT_API_KEY", "local-secret")
    adapter = registry.create_model("openai-compat:m@replay")
    run(adapter, [user_text("b")])
    by_url = registry.create_model(f"openai-compat:m@{server.url}/v1/")
    run(by_url, [user_text("c")])
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"
    assert server.requests[1].headers["authorization"] == "Bearer local-secret"
    assert server.requests[2].headers["authorization"] == "Bearer local-secret"
    assert adapter.spec == "openai-compat:m@replay" and adapter.vendor == "openai-compat"
    assert "openai-compat" in registry.configured_vendors()


def test_a_url_from_the_command_line_is_reached_without_the_key(monkeypatch):
    monkeypatch.setenv("OPENAI_COMPAT_API_KEY", "local-secret")
    monkeypatch.setattr(compat_endpoints, "_command_line_urls", set())
    with ChatCompletionsReplay() as other:
        other.default = Turn([{"text": "hi"}])
        spec = f"openai-compat:m@{other.url}/v1"
        with pytest.raises(registry.ModelSpecError) as refused:
            registry.create_model(spec)
        assert refused.value.status == 403
        compat_endpoints.allow_command_line_url(spec.partition(":")[2])
        run(registry.create_model(spec), [user_text("a")])
    assert other.requests[0].headers["authorization"] == "Bearer not-needed"


def test_endpoints_come_from_the_servers_configuration(monkeypatch):
    monkeypatch.setenv(ENDPOINTS_ENV, "local=http://127.0.0.1:11434/v1, vllm=http://gpu:8000/v1,bad=ftp://x,=http://y")
    monkeypatch.setenv("OPENAI_COMPAT_BASE_URL", "http://127.0.0.1:8080/v1")
    assert compat_endpoints.configured() == {"local": "http://127.0.0.1:11434/v1", "vllm": "http://gpu:8000/v1",
                                             "default": "http://127.0.0.1:8080/v1"}
    assert compat_endpoints.resolve(None) == compat_endpoints.Endpoint("http://127.0.0.1:8080/v1", "default")
    assert compat_endpoints.resolve("vllm").url == "http://gpu:8000/v1"
    assert compat_endpoints.resolve("HTTP://GPU:8000/v1/").name == "vllm"
    for target in ("http://169.254.169.254/latest", "http://gpu:8000/v2", "nowhere"):
        with pytest.raises(registry.ModelSpecError) as refused:
            compat_endpoints.resolve(target)
        assert refused.value.status == 403 and "local, vllm" in str(refused.value)
    monkeypatch.delenv("OPENAI_COMPAT_BASE_URL")
    with pytest.raises(registry.ModelSpecError, match="name an endpoint"):
        compat_endpoints.resolve(None)
    monkeypatch.setenv(ENDPOINTS_ENV, "")
    assert not registry.vendor_info("openai-compat").is_configured()
