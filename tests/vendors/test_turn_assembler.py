"""The one fold every adapter shares: parts in arrival order, arguments parsed once, one wording."""
from __future__ import annotations

import json

import pytest

from cloud.vendors.turn_assembler import TurnAssembler, decline, parse_arguments, wording
from tests.vendors.replay.base import Turn
from tests.vendors.test_faults import VENDORS, run


def test_prose_pieces_and_calls_become_parts_in_arrival_order_with_their_chunks():
    fold = TurnAssembler("acme")
    chunks = [fold.prose("thinking", "Look "), fold.prose("thinking", "first."), fold.prose("text", "Counting.")]
    fold.open_call("k", "call_1", "execute_data_collection")
    chunks += [fold.call_piece("k", '{"code": '), fold.call_piece("k", '"print(1)"}'), fold.close_call("k")]
    chunks.append(fold.prose("text", "Done."))
    turn = fold.build()
    assert [c.type for c in chunks] == ["Thinking", "Thinking", "Message", "ToolInputDelta", "ToolInputDelta",
                                        "ToolCall", "Message"]
    assert chunks[5].metadata == {"tool_call_id": "call_1", "name": "execute_data_collection",
                                  "input": {"code": "print(1)"}}
    assert turn.content == [{"type": "thinking", "text": "Look first."}, {"type": "text", "text": "Counting."},
                            {"type": "tool_call", "id": "call_1", "name": "execute_data_collection",
                             "input": {"code": "print(1)"}},
                            {"type": "text", "text": "Done."}]
    assert turn.stop_reason == "tool_use"


def test_keyed_parts_collect_their_own_pieces_and_an_unclosed_call_never_reaches_the_turn():
    fold = TurnAssembler("acme")
    fold.start_prose("text", "a")
    fold.start_prose("thinking", "b", {"vendor": "acme", "sig": "S"})
    fold.prose("text", "one ", "a")
    fold.prose("thinking", "why", "b")
    fold.prose("text", "two", "a")
    fold.open_call("c", "call_x", "capture_view")
    fold.call_piece("c", '{"view": "Le')
    turn = fold.build("cancelled")
    assert turn.content == [{"type": "text", "text": "one two"},
                            {"type": "thinking", "text": "why", "vendor_state": {"vendor": "acme", "sig": "S"}}]
    assert turn.stop_reason == "cancelled" and not fold.has_calls


def test_malformed_arguments_get_one_wording_and_their_raw_text_is_kept_for_the_vendor():
    fold = TurnAssembler("acme")
    fold.open_call(0, "call_1", "execute_data_collection")
    fold.call_piece(0, '{"code": "print(1)')
    chunk = fold.close_call(0, problem=wording()["cut_off"])
    [call] = fold.build().tool_calls
    assert call["input"] == {} and call["input_error"].startswith(wording()["cut_off"])
    assert "were not valid JSON" in call["input_error"] and chunk.metadata["input_error"] == call["input_error"]
    assert call["vendor_state"] == {"vendor": "acme", "arguments": '{"code": "print(1)'}
    assert parse_arguments("") == ({}, None) and parse_arguments('{"a": 1}') == ({"a": 1}, None)
    assert "expected a JSON object, got an array" in parse_arguments("[1]")[1]


def test_a_refusal_keeps_no_calls_and_always_says_something():
    fold = TurnAssembler("acme")
    fold.whole_call("call_1", "execute_task_automation", {"code": "x"})
    turn = fold.build("refusal")
    chunks = decline(turn)
    assert turn.stop_reason == "refusal" and not turn.tool_calls and turn.text == wording()["refusal"]
    assert [c.content for c in chunks] == [wording()["refusal"]]


@pytest.fixture
def every_streaming_vendor(monkeypatch):
    """The vendors whose arguments arrive as text (Gemini sends calls as objects), each on its replay server."""
    from contextlib import ExitStack

    from cloud.vendors.compat_endpoints import ENDPOINTS_ENV

    with ExitStack() as stack:
        out = []
        for vendor in VENDORS:
            if vendor.name == "gemini":
                continue
            server = stack.enter_context(vendor.replay())
            if vendor.name == "openai-compat":
                monkeypatch.setenv(ENDPOINTS_ENV, f"replay={server.url}/v1")
            out.append((vendor, server, vendor.adapter(server.url)))
        yield out


def test_every_vendor_tells_the_model_about_malformed_arguments_in_the_same_words(every_streaming_vendor):
    bad = '{"code": "print(1)", }'
    notes = {}
    for vendor, server, model in every_streaming_vendor:
        server.enqueue(Turn([{"tool_call": {"name": "execute_data_collection", "raw_json": bad}}]))
        _, turn = run(model)
        [call] = turn.tool_calls
        assert call["input"] == {}
        notes[vendor.name] = call["input_error"]
    assert len(set(notes.values())) == 1, json.dumps(notes, indent=1)
    assert repr(bad) in next(iter(notes.values()))
