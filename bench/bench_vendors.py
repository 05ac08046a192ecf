"""Vendor adapter benchmarks, through the real SDKs against the loopback replay servers.

1. Normalisation throughput: one long streamed turn (thinking, prose, a tool call whose JSON arrives in
   pieces) parsed by the vendor SDK and normalised by the adapter; chunks per second. Target >= 50,000.
2. Billed-input ratio: a 30-turn tool-using conversation; each turn's normalised usage (from the replay
   server's prefix-cache simulation) priced with and without the cache. Target <= 0.20 (floor ~0.17).

    python bench/bench_vendors.py [--only anthropic,gemini] [--chunks 60000] [--turns 30]

Adding an adapter is one entry in ADAPTERS: a replay server factory, an adapter factory given the server
URL, the smallest prefix the vendor caches, and optionally a fold of pre-parsed events through the
adapter alone (to show how the cost splits between the SDK's parser and our normalisation).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import anthropic  # noqa: E402
import openai  # noqa: E402
from google import genai  # noqa: E402
from google.genai import types  # noqa: E402

from cloud.contract import tool_definitions  # noqa: E402
from cloud.transcript import tool_result_part, tool_results, user_text  # noqa: E402
from cloud.vendors.anthropic import AnthropicModel  # noqa: E402
from cloud.vendors.anthropic import StreamState as AnthropicStreamState  # noqa: E402
from cloud.vendors.base import ModelAdapter, TurnRequest, Usage  # noqa: E402
from cloud.vendors.compat_endpoints import ENDPOINTS_ENV  # noqa: E402
from cloud.vendors.gemini import GeminiModel  # noqa: E402
from cloud.vendors.gemini import StreamState as GeminiStreamState  # noqa: E402
from cloud.vendors.openai_compat import ChatStreamReader, OpenAICompatModel  # noqa: E402
from cloud.vendors.openai_responses import OpenAIResponsesModel, ResponsesStreamReader  # noqa: E402
from cloud.vendors.pricing import billed_input_cost, uncached_input_cost  # noqa: E402
from cloud.vendors.retry import RetryPolicy  # noqa: E402
from tests.vendors.replay.anthropic import AnthropicReplay  # noqa: E402
from tests.vendors.replay.base import PrefixCache, ReplayServer, Turn, drain  # noqa: E402
from tests.vendors.replay.chat_completions import ChatCompletionsReplay  # noqa: E402
from tests.vendors.replay.gemini import GeminiReplay  # noqa: E402
from tests.vendors.replay.openai_responses import OpenAIResponsesReplay  # noqa: E402

SYSTEM_PROMPT = Path(__file__).resolve().parents[1] / "cloud" / "prompts" / "system.md"


@dataclass
class AdapterBench:
    name: str
    replay: Callable[[PrefixCache], ReplayServer]
    adapter: Callable[[str], ModelAdapter]  # server URL -> adapter speaking to it
    min_cached_tokens: int  # the vendor's smallest cacheable prefix
    # Optional: fold already-parsed events through the adapter alone -> (chunks, seconds), to split
    # the cost between the SDK's parser and our normalisation.
    fold_only: Callable[[list[bytes]], tuple[int, float]] | None = None


def _sse_payloads(frames: list[bytes]) -> list[str]:
    lines = b"".join(frames).decode().split("\n")
    return [line[6:] for line in lines if line.startswith("data: ")]


def _fold_anthropic(frames: list[bytes]) -> tuple[int, float]:
    events = [json.loads(p) for p in _sse_payloads(frames)]
    state = AnthropicStreamState()
    started = time.perf_counter()
    count = sum(1 for event in events if state.handle(event) is not None)
    return count, time.perf_counter() - started


def _fold_gemini(frames: list[bytes]) -> tuple[int, float]:
    responses = [types.GenerateContentResponse.model_validate(json.loads(p)) for p in _sse_payloads(frames)]
    state = GeminiStreamState([t["name"] for t in tool_definitions()])
    started = time.perf_counter()
    count = sum(len(list(state.handle(response))) for response in responses)
    return count, time.perf_counter() - started


def _fold_openai(frames: list[bytes]) -> tuple[int, float]:
    events = [json.loads(p) for p in _sse_payloads(frames)]
    reader = ResponsesStreamReader()
    started = time.perf_counter()
    count = sum(len(reader.read(event)) for event in events)
    return count, time.perf_counter() - started


def _fold_openai_compat(frames: list[bytes]) -> tuple[int, float]:
    chunks = [json.loads(p) for p in _sse_payloads(frames) if p != "[DONE]"]
    reader = ChatStreamReader()
    started = time.perf_counter()
    count = sum(len(reader.read(chunk)) for chunk in chunks)
    return count, time.perf_counter() - started


def _openai(url: str) -> ModelAdapter:
    client = openai.OpenAI(api_key="bench", base_url=url + "/v1", max_retries=0)
    return OpenAIResponsesModel("gpt-5.1", client=client, policy=RetryPolicy.fast())


def _openai_compat(url: str) -> ModelAdapter:
    os.environ[ENDPOINTS_ENV] = f"bench={url}/v1"  # the server's allow-list, as an operator would set it
    return OpenAICompatModel("qwen3-coder@bench", policy=RetryPolicy.fast())


def _anthropic(url: str) -> ModelAdapter:
    client = anthropic.Anthropic(api_key="bench", base_url=url, max_retries=0)
    return AnthropicModel("claude-sonnet-4-6", client=client, retry=RetryPolicy.fast())


def _gemini(url: str) -> ModelAdapter:
    client = genai.Client(api_key="bench", http_options=types.HttpOptions(base_url=url, api_version="v1beta"))
    return GeminiModel("gemini-2.5-pro", client=client, retry=RetryPolicy.fast())


ADAPTERS: list[AdapterBench] = [
    AdapterBench("anthropic", AnthropicReplay, _anthropic, 1024, _fold_anthropic),
    AdapterBench("gemini", GeminiReplay, _gemini, 2048, _fold_gemini),
    AdapterBench("openai", OpenAIResponsesReplay, _openai, 1024, _fold_openai),
    # vLLM caches prefixes in 16-token blocks; Ollama and llama.cpp reuse any common prefix.
    AdapterBench("openai-compat", ChatCompletionsReplay, _openai_compat, 16, _fold_openai_compat),
]


def system_prompt() -> str:
    return SYSTEM_PROMPT.read_text() if SYSTEM_PROMPT.exists() else "You automate BIM authoring tools.\n" * 60


def long_turn(chunks: int) -> Turn:
    """About `chunks` streamed pieces: thinking, prose, then a tool call's JSON in pieces."""
    piece = 6
    share = chunks // 3
    code = "for door in model.by_type('IfcDoor'):\n    print(door.id(), door.Name)\n" * (share * piece // 70 + 1)
    return Turn([{"thinking": "t" * (share * piece), "signature": "sig"}, {"text": "m" * (share * piece)},
                 {"tool_call": {"name": "execute_data_collection", "input": {"code": code[:share * piece]}}}],
                piece_chars=piece)


def throughput(bench: AdapterBench, chunks: int, repeats: int = 3) -> tuple[int, float, float, float | None]:
    """Chunks per second of the best run, by wall clock and by this process's CPU time (the machine may
    be shared; CPU time is what the adapter and SDK cost), and of the adapter's fold alone."""
    best = best_cpu = 0.0
    fold_rate = None
    count = 0
    with bench.replay(PrefixCache()) as server:
        model = bench.adapter(server.url)
        server.default = long_turn(chunks)
        request = TurnRequest("bench", [user_text("go")], tool_definitions(), 8192, "bench")
        drain(model.stream(request, threading.Event()))  # warm up: connection, imports, caches
        # Render the long reply once, so the timed runs measure the client side, not the replay server.
        reply = server.render_turn(server.requests[-1], long_turn(chunks))
        server.default = lambda _request: reply
        for _ in range(repeats):
            started, started_cpu = time.perf_counter(), time.process_time()
            out, _ = drain(model.stream(request, threading.Event()))
            elapsed, elapsed_cpu = time.perf_counter() - started, time.process_time() - started_cpu
            count = len(out)
            best = max(best, count / elapsed)
            best_cpu = max(best_cpu, count / max(elapsed_cpu, 1e-9))
        if bench.fold_only is not None:
            folded, seconds = bench.fold_only(reply.frames)
            fold_rate = folded / max(seconds, 1e-9)
    return count, best, best_cpu, fold_rate


def cache_ratio(bench: AdapterBench, turns: int) -> tuple[float, Usage]:
    """Billed input with the cache over billed input as if nothing were cached, across `turns` turns."""
    total = Usage()
    billed = unbilled = 0.0
    with bench.replay(PrefixCache(min_tokens=bench.min_cached_tokens)) as server:
        model = bench.adapter(server.url)
        transcript = [user_text("Renumber every door on level 3 by the room it opens into, then check.")]
        for turn_index in range(turns):
            code = f"doors = model.by_type('IfcDoor')\nfor d in doors[{turn_index}::7]:\n    print(d.Name)\n"
            server.enqueue(Turn([{"thinking": "Next I check the storey.", "signature": f"s{turn_index}"},
                                 {"text": f"Step {turn_index}: running the next script."},
                                 {"tool_call": {"name": "execute_data_collection", "input": {"code": code}}}]))
            request = TurnRequest(system_prompt(), list(transcript), tool_definitions(), 8192, "bench-session")
            _, turn = drain(model.stream(request, threading.Event()))
            total.add(turn.usage)
            billed += billed_input_cost(model.spec, turn.usage) or 0.0
            unbilled += uncached_input_cost(model.spec, turn.usage) or 0.0
            call = turn.tool_calls[0]
            output = "\n".join(f"D-{turn_index}-{n} Door {n} 0.9 m" for n in range(40))
            transcript += [{"role": "assistant", "model": model.spec, "content": turn.content},
                           tool_results([tool_result_part(call["id"], call["name"], output)])]
    if not unbilled:  # an unpriced model (local servers): the share of input tokens prefilled from scratch
        return (total.uncached_input + total.cache_write) / max(1, total.total_input), total
    return billed / unbilled, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="comma-separated adapter names")
    parser.add_argument("--chunks", type=int, default=60_000)
    parser.add_argument("--turns", type=int, default=30)
    args = parser.parse_args()
    wanted = {n for n in args.only.split(",") if n}
    for bench in ADAPTERS:
        if wanted and bench.name not in wanted:
            continue
        count, rate, cpu_rate, fold_rate = throughput(bench, args.chunks)
        ratio, usage = cache_ratio(bench, args.turns)
        fold = f"; adapter fold alone {fold_rate:,.0f} chunks/s" if fold_rate else ""
        print(f"{bench.name}: throughput {rate:,.0f} chunks/s wall, {cpu_rate:,.0f} chunks/s of CPU "
              f"({count:,} chunks in the turn; target >= 50,000){fold}")
        print(f"{bench.name}: billed-input ratio {ratio:.3f} over {args.turns} turns (target <= 0.20; "
              f"{usage.cache_read:,} read / {usage.cache_write:,} written / {usage.uncached_input:,} uncached tokens)")


if __name__ == "__main__":
    main()
