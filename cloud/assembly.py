"""Assembling one run outside any web framework: a model adapter, a host link, a store and settings.

The chat page's routes, `nexus run`, the MCP server and the evaluator all call `run_session`; it loads the
session, leads the person's message with the host's context block, drives the loop, records usage and
keeps the session's status. It yields the run's stream chunks.
"""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from cloud.chunks import Chunk
from cloud.config import Settings
from cloud.context import fetch_context, render_context_block
from cloud.hostlink import HostDirectory, HostLink, HostUnavailable, request_id_for
from cloud.hosts.registry import UnknownHostApp, get_provider, host_tool_definitions
from cloud.loop import RunContext, run_agentic_loop
from cloud.process_owner import owner_gone, this_process
from cloud.prompts import message, text
from cloud.session_refs import refs_of_row
from cloud.store import Store
from cloud.tools.opening import open_tool_context
from cloud.transcript import Entry, marker, run_end, tool_result_part, tool_results, user_text
from cloud.vendors.base import ModelAdapter, Usage
from cloud.vendors.images import vision_limits
from cloud.vendors.pricing import estimate_cost

RECOVERY_SCAN_LIMIT = 100_000  # sessions looked at (most recently updated first) for runs left running
AUTOMATION = "execute_task_automation"


def system_prompt(host: HostLink | None) -> str:
    """The base prompt plus the host's fragment; nothing in it changes from turn to turn (cache prefix)."""
    parts = [text("system.md")]
    if host is not None and host.connected():
        try:
            parts.append(get_provider(host.host_app).system_prompt_fragment(host.hello))
        except UnknownHostApp:
            pass
    # Interned: the runs of one host share one copy (a waiting run keeps its prompt; about 3.5 KB each).
    return sys.intern("\n\n".join(p.strip() for p in parts))


def image_fit(model: ModelAdapter) -> Callable[[int, int], tuple[int, int]]:
    """The size an image reaches this model at, after its vendor's scaling (the vendor's vision limits)."""
    return vision_limits(model.vendor, model.model).fit


def run_session(store: Store, settings: Settings, model: ModelAdapter, host: HostLink | None,
                row: dict[str, Any], user_message: str, cancel: threading.Event,
                owner: str | None = None) -> Iterator[Chunk]:
    """One run of the session `row` (a store row) for the person's message, as stream chunks. `owner` is
    who drives it: the run registry's owner (its lease's), else this process."""
    tools = open_tool_context(store, settings, row, host, image_max_px=model.image_max_px, owner=owner or this_process(),
                              cancel=cancel, image_fit=image_fit(model), transcript=True)
    session = tools.session

    def append(entry: Entry) -> None:
        session.transcript.append(entry)
        store.sessions.append_entries(session.session_id, [entry])

    def record_usage(usage: Usage) -> dict[str, Any]:
        cost = estimate_cost(model.spec, usage)
        if usage.total_input or usage.output:
            store.ledger.record_usage(session_id=session.session_id, user_name=session.user_name, model=model.spec,
                               usage=usage.as_dict(), cost=cost)
        return {**usage.as_dict(), "cost": cost, "model": model.spec}

    tools.save_state()
    store.sessions.update_session(session.session_id, status="running")
    status = "error"  # unless the loop ends with Complete (a crash propagates to the caller)
    try:
        append(_user_turn(host, user_message, cancel, refs_of_row(row)))
        context = RunContext(tools, model, system_prompt(host), append, record_usage,
                             host_tool_definitions(host.hello if host is not None and host.connected() else None))
        usage_chunk: Chunk | None = None
        for chunk in run_agentic_loop(context):
            if chunk.type == "ToolCall":  # the page's wait counts from here, also after a reload
                chunk = Chunk(chunk.type, chunk.content, {**(chunk.metadata or {}), "started_at": time.time()})
            elif chunk.type == "AgenticUsage":
                usage_chunk = chunk
            elif chunk.type == "Metadata" and (chunk.metadata or {}).get("kind") == "reset_turn":
                append(marker("retry", chunk.content))  # so a reload shows it where it was
            elif chunk.type == "Error":
                status = "cancelled" if (chunk.metadata or {}).get("cancelled") else "error"
            elif chunk.type == "Complete":
                status = "idle"
            if chunk.type in ("Error", "Complete"):  # the person's record of the ending, before it is streamed
                append(run_end(status if chunk.type == "Error" else "complete",
                               chunk.content if chunk.type == "Error" else "",
                               usage_chunk.metadata if usage_chunk else None,
                               usage_chunk.content if usage_chunk else "",
                               chunk.metadata if chunk.type == "Error" else None))
            yield chunk
    finally:
        store.sessions.update_session(session.session_id, status=status)


def _user_turn(host: HostLink | None, user_message: str, cancel: threading.Event,
               refs: list[dict[str, str]] | None = None) -> Entry:
    """The person's message, led by a fresh context block when a host is connected."""
    entry = user_text(user_message)
    if host is not None and host.connected():
        entry["content"].insert(0, {"type": "text", "kind": "host_context",
                                    "text": render_context_block(host, fetch_context(host, cancel), refs)})
    return entry


def recover_interrupted_runs(store: Store, hosts: HostDirectory | None = None) -> list[str]:
    """End the runs a stopped process left `running`: answer every tool call they left without a result
    (a vendor rejects a transcript with one) and mark them ended. An automation among them may still be
    held open in its host: with `hosts`, the host is told to discard it now if it is connected (to any
    live process), else as soon as it reconnects. Runs
    whose process is alive (another server or `nexus run` on the same store) are left alone. Returns the
    ids of the sessions ended."""
    ended = []
    # Only the runs no live lease covers: the runs live processes drive (thousands may wait) are not read.
    for row in store.leases.running_without_live_lease(time.time(), RECOVERY_SCAN_LIMIT):
        lease = {"owner": row["owner"], "expires": row["expires"]} if row["owner"] is not None else None
        if not _run_abandoned(store, row["id"], lease):
            continue
        transcript = store.sessions.transcript(row["id"])
        dangling = unanswered_tool_calls(transcript)
        if dangling:
            store.sessions.append_entries(row["id"], [tool_results([
                tool_result_part(call["id"], call["name"], message("server_restarted"), is_error=True)
                for call in dangling])])
        for call in dangling:
            if hosts is not None and row["host_id"] and call["name"] == AUTOMATION:
                request_id = request_id_for({"type": "decide"}, call["id"])
                # The abort stops a script still running there (and discards a hold); the decide is for a
                # host runtime that predates abort.
                for command in ({"type": "abort", "request_id": request_id},
                                {"type": "decide", "decision": "discard", "request_id": request_id}):
                    try:  # a host still connected (to this or another live process) is told now
                        hosts.send(row["host_id"], command)
                    except HostUnavailable:
                        hosts.send_on_connect(row["host_id"], command)
        store.sessions.update_session(row["id"], status="error")
        ended.append(row["id"])
    return ended


def _run_abandoned(store: Store, session_id: str, lease: dict[str, Any] | None) -> bool:
    """Whether nothing drives the session's run any more: its lease (`store.run_leases`) expired (its process
    died, on any machine); a run recorded without a lease falls back to the same-machine process check."""
    if lease is not None:
        return lease["expires"] < time.time()
    return owner_gone((store.sessions.get_session(session_id) or {}).get("state", {}).get("run_owner"))


def unanswered_tool_calls(transcript: list[Entry]) -> list[dict[str, Any]]:
    """The tool calls of the last assistant entry when no tool entry answers them."""
    for index in range(len(transcript) - 1, -1, -1):
        entry = transcript[index]
        if entry.get("role") == "assistant":
            calls = [p for p in entry.get("content", []) if p.get("type") == "tool_call"]
            answered = index + 1 < len(transcript) and transcript[index + 1].get("role") == "tool"
            return [] if answered else calls
    return []
