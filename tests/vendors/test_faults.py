"""Retries and faults, the same suite for every vendor: real SDKs against each vendor's loopback replay server.

Adding a vendor here is one entry in VENDORS (its replay server, how to build its adapter against it,
the mid-stream faults that server can inject). Vendor-specific failure shapes (Anthropic's in-stream
`overloaded_error`, OpenAI's error codes) stay in the vendor's own test module.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from cloud.contract import tool_definitions
from cloud.transcript import user_text
from cloud.vendors.base import ModelAdapter, ModelError, TurnRequest
from cloud.vendors.compat_endpoints import ENDPOINTS_ENV
from cloud.vendors.openai_compat import OpenAICompatModel
from cloud.vendors.retry import RetryPolicy
from tests.vendors.adapters import anthropic_model, gemini_model, responses_model
from tests.vendors.replay.anthropic import AnthropicReplay
from tests.vendors.replay.base import HttpError, ReplayServer, Turn, drain
from tests.vendors.replay.chat_completions import ChatCompletionsReplay
from tests.vendors.replay.gemini import GeminiReplay
from tests.vendors.replay.openai_responses import OpenAIResponsesReplay

KEY = "secret-test-key-123"
CALL = {"name": "execute_data_collection", "input": {"code": "print(len(model.by_type('IfcDoor')))"}}


def _anthropic(url: str) -> ModelAdapter:
    return anthropic_model(url, key=KEY)


def _openai(url: str) -> ModelAdapter:
    return responses_model(url, key=KEY)


def _gemini(url: str) -> ModelAdapter:
    return gemini_model(url, key=KEY)


def _openai_compat(url: str) -> ModelAdapter:
    return OpenAICompatModel("qwen3-coder@replay", policy=RetryPolicy.fast())


@dataclass(frozen=True)
class Vendor:
    name: str
    replay: Callable[[], ReplayServer]
    adapter: Callable[[str], ModelAdapter]
    mid_stream_faults: tuple[str, ...]
    overloaded: int  # the status this vendor answers when it is overloaded

    def __str__(self) -> str:
        return self.name


VENDORS = [
    Vendor("anthropic", AnthropicReplay, _anthropic, ("error_event", "truncate"), 529),
    Vendor("openai", OpenAIResponsesReplay, _openai, ("error_event", "error_object", "failed", "truncate", "end_early"),
           503),
    Vendor("gemini", GeminiReplay, _gemini, ("error_event", "truncate"), 503),
    Vendor("openai-compat", ChatCompletionsReplay, _openai_compat, ("error_event", "truncate", "end_early"), 502),
]
MID_STREAM = [(v, fault) for v in VENDORS for fault in v.mid_stream_faults]


@pytest.fixture
def served(request, monkeypatch):
    vendor: Vendor = request.param
    with vendor.replay() as server:
        monkeypatch.setenv(ENDPOINTS_ENV, f"replay={server.url}/v1")
        monkeypatch.setenv("OPENAI_COMPAT_API_KEY", KEY)
        yield vendor, server, vendor.adapter(server.url)


def run(model: ModelAdapter, cancel: threading.Event | None = None, max_tokens: int = 4000):
    request = TurnRequest("You automate BIM authoring tools.", [user_text("hi")], tool_definitions(), max_tokens, "s-1")
    return drain(model.stream(request, cancel or threading.Event()))


@pytest.mark.parametrize("served", VENDORS, indirect=True, ids=str)
@pytest.mark.parametrize("faults", [
    lambda v: [HttpError(429, "rate limited", retry_after=0)],
    lambda v: [HttpError(v.overloaded, "overloaded"), HttpError(v.overloaded, "overloaded")],
    lambda v: [HttpError(500, "internal")],
], ids=["429", "overloaded-twice", "500"])
def test_http_failures_before_the_stream_are_retried_without_a_reset(served, faults):
    vendor, server, model = served
    errors = faults(vendor)
    server.enqueue(*errors, Turn([{"text": "recovered"}]))
    chunks, turn = run(model)
    assert turn.text == "recovered" and len(server.requests) == len(errors) + 1
    assert not [c for c in chunks if c.type == "Metadata"]  # nothing had reached the person before the retry


@pytest.mark.parametrize("served, fault", MID_STREAM, indirect=["served"], ids=lambda p: str(p))
def test_a_failure_after_partial_output_resets_the_turn_then_retries(served, fault):
    vendor, server, model = served
    server.enqueue(Turn([{"text": "Half of this arrives and then"}, {"tool_call": CALL}], fault=fault, fault_after=2),
                   Turn([{"text": "All of it arrives."}, {"tool_call": CALL}]))
    chunks, turn = run(model)
    kinds = [c.type for c in chunks]
    reset = kinds.index("Metadata")
    assert reset >= 1 and set(kinds[:reset]) <= {"Message", "Thinking", "ToolInputDelta"}
    assert chunks[reset].metadata["kind"] == "reset_turn" and chunks[reset].metadata["vendor"] == vendor.name
    assert "".join(c.content for c in chunks[reset + 1:] if c.type == "Message") == "All of it arrives."
    assert turn.text == "All of it arrives." and [c["input"] for c in turn.tool_calls] == [CALL["input"]]
    assert len(server.requests) == 2


@pytest.mark.parametrize("served", VENDORS, indirect=True, ids=str)
def test_exhausted_retries_name_vendor_status_and_retry_after_and_never_the_key(served):
    vendor, server, model = served
    server.enqueue(*[HttpError(429, "rate limited", retry_after=0.01)] * 4)
    with pytest.raises(ModelError) as caught:
        run(model)
    error = caught.value
    assert (error.vendor, error.status, error.retry_after) == (vendor.name, 429, 0.01)
    assert "after 4 attempts" in str(error) and KEY not in str(error)
    assert len(server.requests) == 4


@pytest.mark.parametrize("served", VENDORS, indirect=True, ids=str)
def test_a_bad_request_is_not_retried(served):
    vendor, server, model = served
    server.enqueue(HttpError(400, "the request is malformed"))
    with pytest.raises(ModelError) as caught:
        run(model)
    assert (caught.value.vendor, caught.value.status) == (vendor.name, 400) and len(server.requests) == 1


@pytest.mark.parametrize("served", VENDORS, indirect=True, ids=str)
def test_cancel_stops_the_stream_mid_turn_keeping_the_text_so_far(served):
    vendor, server, model = served
    server.enqueue(Turn([{"text": "x" * 400}, {"tool_call": CALL}], piece_chars=4))
    cancel = threading.Event()
    stream = model.stream(TurnRequest("s", [user_text("hi")], tool_definitions(), 4000, "s-1"), cancel)
    first = next(stream)
    cancel.set()
    rest, turn = drain(stream)
    assert turn.stop_reason == "cancelled" and not turn.tool_calls
    assert turn.text.startswith(first.content) and len(turn.text) < 400 and len(rest) <= 1
