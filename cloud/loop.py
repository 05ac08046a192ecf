"""The agent loop: stream a model turn through, run its tool calls, repeat until a turn has none.

There is no workflow engine: the transcript is the state machine, and the model decides what happens
next. The loop only transports results and enforces limits.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field

from cloud import chunks, compaction
from cloud.chunks import Chunk
from cloud.contract import tool_definitions
from cloud.prompts import message
from cloud.session import max_tokens_for, resolve_phase
from cloud.tools.base import ToolContext
from cloud.tools.dispatch import execute_tool
from cloud.tools.result import ToolResult
from cloud.transcript import Entry, model_view, tool_result_part, tool_results, user_text
from cloud.vendors.base import ModelAdapter, ModelError, ModelTurn, TurnRequest, Usage

log = logging.getLogger(__name__)


@dataclass
class RunContext:
    tools: ToolContext  # session, store, host link, settings, cancel flag
    model: ModelAdapter
    system: str
    append: Callable[[Entry], None]  # persist one new transcript entry
    record_usage: Callable[[Usage], dict]  # persist one turn's usage, return its totals for the chunk
    tool_defs: tuple[dict, ...] = field(default_factory=tool_definitions)  # as the host's provider words them


def run_agentic_loop(run: RunContext) -> Iterator[Chunk]:
    session, settings, cancel = run.tools.session, run.tools.settings, run.tools.cancel
    yield chunks.metadata("model", run.model.spec, model=run.model.spec, vendor=run.model.vendor)
    usage, final_text, failure = Usage(), None, None
    try:
        for _ in range(settings.max_turns):
            if cancel.is_set():
                break
            compacted = yield from compaction.maybe_compact(session.transcript, run.model, run.system,
                                                            run.tool_defs, session.session_id, cancel)
            if compacted is not None:
                for entry in compacted[len(session.transcript):]:
                    if entry.get("role") == "compaction":
                        usage.add(Usage(**entry.get("usage", {})))
                    run.append(entry)
            budget = max_tokens_for(resolve_phase(session.state), settings)
            turn, cut_in_call = yield from _stream_turn(run, budget)
            if cut_in_call and budget < settings.heavy_max_tokens:
                yield chunks.metadata("reset_turn", "Retrying the turn with a larger output budget")
                usage.add(turn.usage)
                turn, cut_in_call = yield from _stream_turn(run, settings.heavy_max_tokens)
            usage.add(turn.usage)
            run.append({"role": "assistant", "model": run.model.spec, "content": turn.content,
                        "usage": turn.usage.as_dict()})
            if cut_in_call:
                note = user_text(message("truncated_call"))
                note["content"][0]["kind"] = "truncated_call"  # the loop's words, not the person's
                run.append(note)
                continue
            if not turn.tool_calls:
                final_text = None if cancel.is_set() else turn.text
                break
            yield from _run_tools(run, turn)
        else:
            failure = chunks.error(message("turn_limit", limit=settings.max_turns))
    except ModelError as exc:
        failure = chunks.error(str(exc), vendor=exc.vendor, status=exc.status, retry_after=exc.retry_after)
    if cancel.is_set() and final_text is None:
        failure = chunks.error(message("run_cancelled"), cancelled=True)
    totals = run.record_usage(usage)
    yield Chunk("AgenticUsage", _usage_line(totals), totals)
    yield failure or Chunk("Complete", final_text or "")


def _stream_turn(run: RunContext, max_tokens: int) -> Generator[Chunk, None, tuple[ModelTurn, bool]]:
    """Stream one turn through; also report whether it stopped at max_tokens inside a tool call."""
    session = run.tools.session
    request = TurnRequest(run.system, model_view(session.transcript), run.tool_defs, max_tokens,
                          session.session_id)
    started, finished = set(), set()
    stream = run.model.stream(request, run.tools.cancel)
    try:
        while True:
            chunk = next(stream)
            if chunk.type == "ToolInputDelta":
                started.add(chunk.metadata["tool_call_id"])
            elif chunk.type == "ToolCall":
                finished.add(chunk.metadata["tool_call_id"])
            yield chunk
    except StopIteration as stop:
        turn: ModelTurn = stop.value
    cut = turn.stop_reason == "max_tokens" and (bool(started - finished) or
                                                any(c.get("input_error") for c in turn.tool_calls))
    if cut:
        turn.content = [p for p in turn.content if p.get("type") != "tool_call"]
    return turn, cut


def _run_tools(run: RunContext, turn: ModelTurn) -> Generator[Chunk, None, None]:
    parts = []
    for call in turn.tool_calls:
        if run.tools.cancel.is_set():
            parts.append(tool_result_part(call["id"], call["name"], message("call_cancelled"), is_error=True))
            continue
        try:
            parts.append((yield from execute_tool(run.tools, call)).part)
        except Exception as exc:  # a bug in one tool must not leave its call unanswered in the transcript
            log.exception("tool %s crashed in session %s", call["name"], run.tools.session.session_id)
            text = message("tool_crashed", detail=f"{type(exc).__name__}: {exc}")
            yield chunks.metadata("tool_result", text, **ToolResult(call["id"], call["name"], False, text).to_json())
            parts.append(tool_result_part(call["id"], call["name"], text, is_error=True))
    run.append(tool_results(parts))


def _usage_line(totals: dict) -> str:
    cost = totals.get("cost")
    money = f" · ${cost:.4f}" if cost is not None else ""
    return (f"{totals.get('uncached_input', 0) + totals.get('cache_read', 0) + totals.get('cache_write', 0):,} in "
            f"({totals.get('cache_read', 0):,} cached) / {totals.get('output', 0):,} out{money}")
