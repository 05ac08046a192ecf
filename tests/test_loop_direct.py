"""The loop and each tool called directly, in-process: a model from an in-memory list of turns, the test
host's document behind an InProcessHostLink, a real SQLite store. No server, no HTTP."""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cloud.assembly import run_session
from cloud.config import Settings
from cloud.contract import validate_chunk
from cloud.session import Phase, Session, SessionState, resolve_phase
from cloud.store import Store
from cloud.tools.base import ToolContext
from cloud.tools.dispatch import HANDLERS, execute_tool
from tests.support.local_host import local_link
from tests.support.memory_model import MemoryModel
from tests.support.spine import assert_transcript_valid, automate, collect, edit, say
from tests.vendors.replay.base import drain as drain_stream

SETTINGS = Settings(tool_timeout_s=5.0, approval_timeout_s=5.0)
RENAME = "for n, i in enumerate(doc.by_class('Door')):\n    doc.elements[i]['name'] = 'N' + str(n)\nprint('ok')\n"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "nexus.db")


def _session(store: Store, host_id: str | None = "h_local", user: str = "alice") -> dict[str, Any]:
    return store.get_session(store.create_session(user, host_id, "scripted:memory", {}))


def _run(store: Store, turns: list, link, text: str = "go", settings: Settings = SETTINGS,
         row: dict | None = None, cancel: threading.Event | None = None) -> tuple[list[Any], dict[str, Any]]:
    row = row or _session(store)
    produced = list(run_session(store, settings, MemoryModel(turns), link, row, text, cancel or threading.Event()))
    return produced, row


def _texts(store: Store, session_id: str) -> list[str]:
    return [p["content"][0]["text"] for e in store.transcript(session_id) if e["role"] == "tool" for p in e["content"]]


def test_a_whole_run_in_process_collects_fails_fixes_iterates_and_completes(store):
    link, host = local_link()
    produced, row = _run(store, [
        collect("print(len(doc.by_class('Door')))"),
        automate(RENAME.replace("doc.elements[i]", "doc.elemnts[i]")),
        edit({"old": "doc.elemnts", "new": "doc.elements"}),
        edit({"old": "'N' + str(n)", "new": "'N' + str(n).zfill(2)"}),
        say("Renamed."),
    ], link)
    for chunk in produced:
        validate_chunk(chunk.to_json())
    assert produced[-1].type == "Complete" and produced[-1].content == "Renamed."
    assert sorted(e["name"] for e in host.document.elements.values() if e["class"] == "Door") == \
        [f"N{n:02d}" for n in range(6)]
    transcript = store.transcript(row["id"])
    assert_transcript_valid(transcript)
    assert transcript[0]["content"][0]["kind"] == "host_context"  # the context block came through the link
    collected, failed, fixed, iterated = _texts(store, row["id"])
    assert "Output:\n6" in collected and "AttributeError" in failed
    assert "Budget: fix 1 of 5" in fixed and "Budget: iteration 1 of 3" in iterated
    assert store.get_session(row["id"])["status"] == "idle"
    executes = [c for c in host.received if c["type"] == "execute"]
    assert [c["request_id"] for c in executes] == [f"{c['request_id'].split('.')[0]}.run" for c in executes]


def _ctx(store: Store, link, state: SessionState | None = None) -> ToolContext:
    row = _session(store)
    session = Session(row["id"], "alice", "h_local", "scripted:memory", state or SessionState())
    return ToolContext(store, link, SETTINGS, session, threading.Event(), 800,
                       lambda: store.update_session(row["id"], state=session.state.to_json()))



def drain(stream):
    """The tool's chunks and the model's part; the person's copy it returns is the tool_result chunk's."""
    chunks, called = drain_stream(stream)
    shown = [c.metadata for c in chunks if c.type == "Metadata" and c.metadata.get("kind") == "tool_result"]
    assert [{"kind": "tool_result", **called.person}] == shown[-1:]
    return chunks, called.part

def test_every_tool_has_one_handler_in_the_table():
    from cloud.contract import tool_definitions

    assert set(HANDLERS) == {t["name"] for t in tool_definitions()}


def test_capture_view_called_directly_saves_the_image_and_gives_the_model_its_pixels(store):
    link, host = local_link()
    ctx = _ctx(store, link)
    chunks, part = drain(execute_tool(ctx, {"id": "c1", "name": "capture_view", "input": {"view": "Level 1"}}))
    (person,) = chunks
    meta = person.metadata
    assert meta["ok"] is True and meta["image"]["width"] == 800 and meta["image"]["height"] == 600
    assert store.get_image(ctx.session.session_id, meta["image"]["image_id"]).startswith(b"\x89PNG")
    assert part["content"][1]["type"] == "image" and part["content"][1]["width"] == 800
    assert host.received[0]["max_px"] == 800 and host.received[0]["request_id"] == "c1.view"
    assert ctx.session.state == SessionState()  # a capture leaves the phase where it was


def test_a_missed_anchor_costs_no_budget_and_leaves_the_phase_alone(store):
    link, host = local_link()
    state = SessionState(current_script="doc.add('Door', 'X')\n", last_task_committed=True,
                         last_completed_tool="execute_task_automation", iteration_count=1)
    ctx = _ctx(store, link, state)
    before = SessionState(**state.to_json())
    _, part = drain(execute_tool(ctx, {"id": "c1", "name": "execute_task_automation",
                                        "input": {"edits": [{"old": "'Nope'", "new": "'Y'"}]}}))
    assert part["is_error"] and "not found" in part["content"][0]["text"]
    assert ctx.session.state == before and resolve_phase(ctx.session.state) is Phase.VERIFY
    assert host.received == []


def test_a_host_that_disconnects_mid_call_fails_the_call_at_once(store):
    link, host = local_link(silent=True)
    ctx = _ctx(store, link)
    threading.Timer(0.3, link.close).start()
    started = time.monotonic()
    _, part = drain(execute_tool(ctx, {"id": "c1", "name": "execute_data_collection", "input": {"code": "x=1"}}))
    assert time.monotonic() - started < 2  # not the 5 s tool timeout
    assert part["is_error"] and "disconnected" in part["content"][0]["text"]
    host.release.set()


def test_a_cancel_while_the_host_works_ends_the_call_and_says_the_outcome_is_unknown(store):
    link, host = local_link(silent=True)
    ctx = _ctx(store, link)
    threading.Timer(0.2, ctx.cancel.set).start()
    _, part = drain(execute_tool(ctx, {"id": "c1", "name": "execute_data_collection", "input": {"code": "x=1"}}))
    assert "outcome is unknown" in part["content"][0]["text"]
    host.release.set()


def test_under_ask_the_person_keeps_a_held_change_through_the_link(store):
    link, host = local_link()
    row = _session(store)
    store.update_session(row["id"], policy="ask")
    decided = []

    def decide_when_asked() -> None:
        while not link.awaiting_decision():
            time.sleep(0.01)
        (about,) = link.awaiting_decision()
        decided.append(link.decide(about, {"decision": "keep", "by": "alice"}))

    threading.Thread(target=decide_when_asked, daemon=True).start()
    produced, _ = _run(store, [automate("doc.add('Wall', 'New')"), say("Kept.")], link, row=row)
    assert decided == [True]
    assert any(c.type == "Metadata" and c.metadata["kind"] == "approval_request" for c in produced)
    (result,) = [c for c in produced if c.type == "Metadata" and c.metadata["kind"] == "tool_result"]
    assert result.metadata["committed"] is True and result.metadata["decision"]["by"] == "alice"
    assert "New" in [e["name"] for e in host.document.elements.values()]


def test_a_run_without_a_host_tells_the_model_so(store):
    produced, row = _run(store, [collect("print(1)"), say("No host.")], None, row=_session(store, host_id=None))
    assert produced[-1].content == "No host."
    (text,) = _texts(store, row["id"])
    assert "No host application is connected" in text


def test_the_image_size_the_model_is_told_is_the_size_its_vendor_scaling_produces(store):
    from cloud.assembly import image_fit
    from cloud.vendors.images import scale_for

    link, host = local_link()
    model = MemoryModel([])
    ctx = _ctx(store, link)
    ctx.image_max_px, ctx.image_fit = 1568, image_fit(model)  # the host renders 1568 x 1176: over 1.15 MP
    _, part = drain(execute_tool(ctx, {"id": "c1", "name": "capture_view", "input": {}}))
    sent = part["content"][1]
    assert (sent["width"], sent["height"]) == (1568, 1176)
    received = scale_for(model.vendor, "memory", sent)
    assert (received["width"], received["height"]) != (1568, 1176)
    assert f"({received['width']}x{received['height']} px)" in part["content"][0]["text"]


def test_lookup_api_called_directly_answers_from_the_hosts_index_without_a_host_round_trip(store):
    link, host = local_link()
    ctx = _ctx(store, link)
    chunks, part = drain(execute_tool(ctx, {"id": "c1", "name": "lookup_api", "input": {"query": "add a door"}}))
    text = part["content"][0]["text"]
    assert part["is_error"] is False and "Document.add(" in text
    assert chunks[0].metadata["summary"] == text and host.received == []
    assert ctx.session.state == SessionState()  # a lookup leaves the phase where it was


def test_execute_data_collection_called_directly_reports_the_output_and_changes_nothing(store):
    link, host = local_link()
    ctx = _ctx(store, link)
    before = dict(host.document.elements)
    chunks, part = drain(execute_tool(ctx, {"id": "c1", "name": "execute_data_collection",
                                             "input": {"code": "doc.add('Wall', 'tmp')\nprint(len(doc.elements))"}}))
    assert "Output:\n9" in part["content"][0]["text"] and host.document.elements == before
    (person,) = chunks
    assert person.metadata["stdout"] == "9\n" and person.metadata["committed"] is False
    assert store.get_result(ctx.session.session_id, "c1")["stdout"] == "9\n"
    assert ctx.session.state.last_completed_tool == "execute_data_collection"


def test_a_run_cancelled_while_a_change_awaits_review_still_tells_the_host_to_discard_it(store):
    link, host = local_link()
    row = _session(store)
    store.update_session(row["id"], policy="ask")
    cancel = threading.Event()

    def cancel_when_asked() -> None:
        while not link.awaiting_decision():
            time.sleep(0.01)
        cancel.set()

    threading.Thread(target=cancel_when_asked, daemon=True).start()
    before = dict(host.document.elements)
    produced, _ = _run(store, [automate("doc.add('Wall', 'Held')"), say("never")], link, row=row, cancel=cancel)
    decides = [c for c in host.received if c["type"] == "decide"]
    assert [d["decision"] for d in decides] == ["discard"] and host.core.held == {}
    assert host.document.elements == before
    assert produced[-1].type == "Error" and produced[-1].metadata["cancelled"] is True
    assert_transcript_valid(store.transcript(row["id"]))
    assert store.get_session(row["id"])["status"] == "cancelled"
    (text,) = _texts(store, row["id"])
    assert "cancelled the run before deciding" in text and "minutes" not in text
