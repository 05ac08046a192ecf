"""The vendor infrastructure every adapter shares: retries, vision ceilings, pricing, tool dialects, replay base."""
from __future__ import annotations

import base64
import email.utils
import io
import json
import threading
import time

import pytest
import requests
from google.genai import types
from PIL import Image

from cloud.chunks import Chunk
from cloud.contract import tool_definitions
from cloud.vendors.base import ModelError, ModelTurn, Usage
from cloud.vendors.images import VisionLimits, image_max_px, scale_for, vision_limits
from cloud.vendors.pricing import billed_input_cost, estimate_cost, price_for, uncached_input_cost
from cloud.vendors.retry import RetryPolicy, VendorFailure, parse_retry_after, stream_with_retries
from cloud.vendors.tool_schemas import (
    anthropic_tools,
    chat_completions_tools,
    gemini_function_declarations,
    responses_tools,
)
from tests.vendors.replay.base import (
    HttpError,
    PrefixCache,
    RecordedRequest,
    ReplayServer,
    Reply,
    Turn,
    drain,
    image_part,
    sse,
)

# --- retry -------------------------------------------------------------------------------------


def test_retry_after_is_read_from_ms_seconds_and_http_dates():
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < parse_retry_after({"retry-after": future}) <= 30
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after(None) is None


def test_backoff_grows_and_a_server_retry_after_is_honoured_but_capped():
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0, max_retry_after=10.0, jitter=0.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]
    assert policy.delay(1, retry_after=3.0) == 3.0
    assert policy.delay(1, retry_after=600.0) == 10.0


def _flaky(failures: list[VendorFailure | None], partial: str = "partial"):
    """An attempt factory: each attempt yields `partial` then raises the next failure, or succeeds."""
    calls = []

    def attempt():
        calls.append(1)
        failure = failures[len(calls) - 1] if len(calls) <= len(failures) else None

        def run():
            if partial:
                yield Chunk("Message", partial)
            if failure is not None:
                raise failure
            return ModelTurn(content=[{"type": "text", "text": "done"}])
        return run()

    return attempt, calls


def test_a_retry_after_partial_output_is_announced_with_reset_turn():
    attempt, calls = _flaky([VendorFailure(529, "overloaded")])
    chunks, turn = drain(stream_with_retries("acme", attempt, threading.Event(), RetryPolicy.fast()))
    assert [c.type for c in chunks] == ["Message", "Metadata", "Message"]
    assert chunks[1].metadata["kind"] == "reset_turn" and chunks[1].metadata["status"] == 529
    assert turn.text == "done" and len(calls) == 2


def test_a_retry_before_any_output_needs_no_reset():
    attempt, calls = _flaky([VendorFailure(429, "slow down", retry_after=0.0)], partial="")
    chunks, turn = drain(stream_with_retries("acme", attempt, threading.Event(), RetryPolicy.fast()))
    assert chunks == [] and turn.text == "done" and len(calls) == 2


def test_exhausted_retries_raise_a_model_error_naming_vendor_status_and_retry_after():
    attempt, calls = _flaky([VendorFailure(429, "rate limited", retry_after=0.02)] * 5, partial="")
    with pytest.raises(ModelError) as caught:
        drain(stream_with_retries("acme", attempt, threading.Event(), RetryPolicy.fast(max_attempts=3)))
    error = caught.value
    assert (error.vendor, error.status, error.retry_after) == ("acme", 429, 0.02)
    assert "acme" in str(error) and "429" in str(error) and "retry after" in str(error)
    assert len(calls) == 3


def test_a_client_error_is_not_retried():
    attempt, calls = _flaky([VendorFailure(400, "bad request")], partial="")
    with pytest.raises(ModelError) as caught:
        drain(stream_with_retries("acme", attempt, threading.Event(), RetryPolicy.fast()))
    assert caught.value.status == 400 and len(calls) == 1


def test_cancel_during_backoff_ends_the_turn_quietly():
    cancel = threading.Event()
    cancel.set()
    attempt, calls = _flaky([VendorFailure(503, "unavailable")], partial="")
    chunks, turn = drain(stream_with_retries("acme", attempt, cancel, RetryPolicy(base_delay=5, jitter=0)))
    assert turn.stop_reason == "cancelled" and len(calls) == 1


# --- images ------------------------------------------------------------------------------------


def _decoded_size(part):
    with Image.open(io.BytesIO(base64.b64decode(part["data"]))) as image:
        return image.size


def test_vision_table_has_a_ceiling_per_vendor():
    assert image_max_px("anthropic", "claude-sonnet-4-5") == 1568
    assert image_max_px("gemini", "gemini-2.5-pro") == 3072
    assert vision_limits("openai", "gpt-5.1").short_edge_px == 768
    assert vision_limits("nobody", "x") == VisionLimits(1024, None, 1.0, 5_000_000)


def test_an_image_over_the_anthropic_ceiling_is_scaled_to_its_edge_and_area_limits():
    scaled = scale_for("anthropic", "claude-sonnet-4-5", image_part(3000, 1000))
    width, height = _decoded_size(scaled)
    assert (width, height) == (scaled["width"], scaled["height"])
    assert width <= 1568 and width * height <= 1.15e6 and abs(width / height - 3.0) < 0.02


def test_an_image_within_the_ceiling_is_passed_through_untouched():
    part = image_part(800, 600)
    assert scale_for("gemini", "gemini-2.5-pro", part) is part


def test_vendor_ceilings_differ_for_the_same_image():
    part = image_part(3400, 1700)
    sizes = {vendor: _decoded_size(scale_for(vendor, "m", part)) for vendor in ("anthropic", "openai", "gemini")}
    assert sizes["gemini"] == (3072, 1536)
    assert sizes["openai"] == (1536, 768)  # short side 768
    assert max(sizes["anthropic"]) <= 1568 and sizes["anthropic"][0] * sizes["anthropic"][1] <= 1.15e6


def test_scaling_is_deterministic_so_cached_prompts_keep_matching():
    part = image_part(2400, 1800)
    assert scale_for("anthropic", "claude-x", part)["data"] == scale_for("anthropic", "claude-x", dict(part))["data"]


def test_the_byte_cap_falls_back_to_jpeg():
    noisy = Image.effect_noise((600, 600), 100).convert("RGB")
    buffer = io.BytesIO()
    noisy.save(buffer, format="PNG")
    part = {"type": "image", "media_type": "image/png", "data": base64.b64encode(buffer.getvalue()).decode(),
            "width": 600, "height": 600}
    assert len(buffer.getvalue()) > 200_000
    from cloud.vendors import images
    scaled = images._rescale(part["data"], part["media_type"], VisionLimits(1568, None, None, 100_000))
    assert scaled[0] == "image/jpeg" and len(base64.b64decode(scaled[1])) <= 100_000


# --- pricing -----------------------------------------------------------------------------------


def test_cost_adds_every_normalised_usage_field_at_its_own_price():
    usage = Usage(uncached_input=1_000_000, cache_read=1_000_000, cache_write=1_000_000, output=1_000_000)
    assert estimate_cost("anthropic:claude-sonnet-4-5", usage) == pytest.approx(3.0 + 0.30 + 3.75 + 15.0)
    assert billed_input_cost("anthropic:claude-sonnet-4-5", usage) == pytest.approx(7.05)
    assert uncached_input_cost("anthropic:claude-sonnet-4-5", usage) == pytest.approx(9.0)


def test_the_most_specific_price_pattern_wins_and_unknown_models_have_no_price():
    assert price_for("openai:gpt-5-mini").input == 0.25
    assert price_for("openai:gpt-5.1").input == 1.25
    assert price_for("gemini:gemini-2.5-flash-lite").output == 0.40
    assert estimate_cost("openai-compat:qwen3@http://127.0.0.1:11434/v1", Usage(output=10)) is None


# --- tool dialects -----------------------------------------------------------------------------


def test_every_dialect_declares_the_same_tools_from_the_canonical_definitions():
    canonical = tool_definitions()
    names = [t["name"] for t in canonical]
    assert [t["name"] for t in anthropic_tools(canonical)] == names
    assert [t["name"] for t in responses_tools(canonical)] == names
    assert [t["function"]["name"] for t in chat_completions_tools(canonical)] == names
    declarations = [types.FunctionDeclaration(**d) for d in gemini_function_declarations(canonical)]
    assert [d.name for d in declarations] == names
    for tool, declared in zip(canonical, responses_tools(canonical), strict=True):
        assert declared["type"] == "function" and declared["parameters"] == tool["input_schema"]
        assert declared["description"] == tool["description"]


def test_dialect_output_is_a_fresh_copy_and_stable_byte_for_byte():
    canonical = tool_definitions()
    first = anthropic_tools(canonical)
    first[-1]["cache_control"] = {"type": "ephemeral"}
    first[0]["input_schema"]["properties"]["x"] = {}
    assert "x" not in canonical[0]["input_schema"]["properties"]
    assert json.dumps(anthropic_tools(canonical)) == json.dumps(anthropic_tools(canonical))
    assert "cache_control" not in anthropic_tools(canonical)[-1]


# --- prefix cache simulation -------------------------------------------------------------------


def test_explicit_cache_reads_the_prefix_written_at_an_earlier_breakpoint():
    cache = PrefixCache()
    first = cache.bill(["t" * 400, "s" * 400, "m1" * 200], breakpoints=[0, 1, 2])
    assert (first.cache_read, first.cache_write, first.uncached) == (0, 300, 0)
    second = cache.bill(["t" * 400, "s" * 400, "m1" * 200, "m2" * 200, "m3" * 200], breakpoints=[0, 1, 4])
    assert (second.cache_read, second.cache_write, second.uncached) == (300, 200, 0)
    unmarked = cache.bill(["t" * 400, "x" * 400], breakpoints=[0])
    assert (unmarked.cache_read, unmarked.cache_write, unmarked.uncached) == (100, 0, 100)


def test_implicit_cache_reads_the_longest_prefix_seen_before():
    cache = PrefixCache(min_tokens=150)
    assert cache.bill(["a" * 400, "b" * 400], None).cache_read == 0
    again = cache.bill(["a" * 400, "b" * 400, "c" * 400], None)
    assert (again.cache_read, again.uncached) == (200, 100)
    short = cache.bill(["a" * 400, "z" * 400], None)
    assert short.cache_read == 0  # a 100-token prefix is below the minimum


# --- replay server base ------------------------------------------------------------------------


class EchoReplay(ReplayServer):
    def render_turn(self, request: RecordedRequest, turn: Turn) -> Reply:
        frames = [sse({"text": item["text"]}, "text") for item in turn.items]
        return Reply(200, {}, frames, truncate_after=1 if turn.fault == "truncate" else None)

    def render_error(self, request: RecordedRequest, error: HttpError) -> Reply:
        return Reply(error.status, {"content-type": "application/json"}, [b'{"error": "x"}'])


def test_the_replay_server_plays_scenarios_in_order_and_records_requests():
    with EchoReplay() as server:
        server.enqueue(HttpError(429), Turn([{"text": "a"}, {"text": "b"}]),
                       lambda request: Reply(201, {}, [request.body]))
        assert requests.post(server.url + "/x", json={"n": 1}, timeout=5).status_code == 429
        assert requests.post(server.url + "/x", json={"n": 2}, timeout=5).text.count("event: text") == 2
        hook = requests.post(server.url + "/y?q=1", data=b"raw", timeout=5)
        assert (hook.status_code, hook.content) == (201, b"raw")
        assert requests.post(server.url + "/z", timeout=5).status_code == 500  # nothing queued
        assert [r.path for r in server.requests] == ["/x", "/x", "/y", "/z"]
        assert server.requests[1].json == {"n": 2} and server.requests[2].query == {"q": ["1"]}
        assert server.requests[0].headers["content-type"] == "application/json"


def test_a_truncated_reply_drops_the_connection_mid_body():
    with EchoReplay() as server:
        server.enqueue(Turn([{"text": "a"}, {"text": "b"}], fault="truncate"))
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            requests.post(server.url + "/x", timeout=5).content  # noqa: B018
