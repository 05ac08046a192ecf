"""The loop against the REAL IFC host (its own runtime, scripts in its isolated child, a real IFC file),
driven in-process through the host seam: full output for the person, truncation told truthfully, the
epilogue's sha256 checked by the host, budgets by phase, and edits shown as they ran."""
from __future__ import annotations

import hashlib
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from cloud.assembly import run_session
from cloud.hostlink import session_link
from ifc_host.sample import write_sample_model
from ifc_host.script import STDOUT_CAP_BYTES
from tests.support.memory_model import MemoryModel
from tests.support.real_ifc import connected_host
from tests.support.server import running_server
from tests.support.spine import assert_transcript_valid, automate, collect, edit, say

HEAVY, LIGHT = 32_000, 4_096


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sample") / "sample.ifc"
    write_sample_model(path, storeys=2)
    return path


class Stack:
    def __init__(self, server, host_id: str, model: Path):
        self.server, self.host_id, self.model = server, host_id, model
        self.store = server.state.store

    def run(self, turns: list, text: str = "go", row: dict | None = None) -> tuple[list[Any], dict, MemoryModel]:
        row = row or self.store.get_session(self.store.create_session("alice", self.host_id, "scripted:m", {}))
        state = self.server.state
        model = MemoryModel(turns)
        link = session_link(state.hosts, state.channel, row)
        produced = list(run_session(self.store, state.settings, model, link, row, text, threading.Event()))
        return produced, row, model

    def texts(self, session_id: str) -> list[str]:
        return [p["content"][0]["text"] for e in self.store.transcript(session_id) if e["role"] == "tool"
                for p in e["content"]]


@pytest.fixture
def stack(tmp_path, sample):
    model = tmp_path / "model.ifc"
    shutil.copy(sample, model)
    with (running_server(tmp_path, keepalive_s=0.5, tool_timeout_s=120, script_timeout_s=60) as server,
          connected_host(model, server.url, server.token("alice"), timeout_s=60) as (_, host_id)):
        yield Stack(server, host_id, model)


def _results(produced: list[Any]) -> list[dict[str, Any]]:
    return [c.metadata for c in produced if c.type == "Metadata" and c.metadata["kind"] == "tool_result"]


def test_a_large_output_reaches_the_person_whole_and_the_model_capped_with_a_true_note(stack):
    code = "for n in range(3000):\n    print('row', n, 'x' * 60)\n"  # ~200 kB: under the host's cap
    produced, row, _ = stack.run([collect(code), say("ok")])
    (person,) = _results(produced)
    expected = "".join(f"row {n} {'x' * 60}\n" for n in range(3000))
    assert person["stdout"] == expected and person["stdout_truncated"] is False
    assert stack.store.get_result(row["id"], person["tool_call_id"])["stdout"] == expected
    (text,) = stack.texts(row["id"])
    assert "the person sees the full output" in text and "cut off here by the host" not in text


def test_output_cut_by_the_host_is_stated_to_the_model_and_flagged_for_the_person(stack):
    code = "for n in range(40000):\n    print('row %06d ' % n + 'y' * 70)\n"  # ~3.2 MB: over the host's cap
    produced, row, _ = stack.run([collect(code), say("ok")])
    (person,) = _results(produced)
    assert person["stdout_truncated"] is True
    kept = person["stdout"]
    assert STDOUT_CAP_BYTES - 100 <= len(kept.encode()) <= STDOUT_CAP_BYTES and not kept.endswith("\n")
    (text,) = stack.texts(row["id"])
    assert "the person sees the full output" not in text
    assert "the line above is partial" in text and "lost, to the person as well" in text
    assert f"after {len(kept):,} characters" in text
    last_partial = kept.rsplit("\n", 1)[1]
    assert last_partial + "\n[output cut off here by the host" in text  # the cut is shown where it fell


def test_the_host_refuses_an_epilogue_whose_sha256_does_not_match_and_nothing_changes(stack, monkeypatch):
    from cloud.hosts.registry import stamped_epilogue
    from cloud.tools import scripts

    def tampered(host_app: str):
        genuine = stamped_epilogue(host_app)
        return type(genuine)(**{**genuine.__dict__, "code": genuine.code + "\nprint('injected')\n"})

    monkeypatch.setattr(scripts, "stamped_epilogue", tampered)
    before = hashlib.sha256(stack.model.read_bytes()).hexdigest()
    produced, row, _ = stack.run([automate("model.by_type('IfcWall')[0].Name = 'X'"), say("refused")])
    (person,) = _results(produced)
    assert person["ok"] is False
    (text,) = stack.texts(row["id"])
    assert "sha256 does not match" in text
    assert hashlib.sha256(stack.model.read_bytes()).hexdigest() == before


RENAME = "wall = sorted(model.by_type('IfcWall'), key=lambda w: w.id())[0]\nwall.Name = 'A'\nprint(wall.Name)\n"


def test_budgets_follow_the_phase_and_captures_after_a_commit_stay_light(stack):
    produced, row, model = stack.run([
        collect("print(len(model.by_type('IfcWall')))"),  # initial: heavy
        automate(RENAME.replace("print(wall.Name)", "print(wall.Nme)")),  # post collection: heavy; fails
        edit({"old": "wall.Nme", "new": "wall.Name"}),  # edit phase: heavy; commits
        [{"tool_call": {"name": "capture_view", "input": {}}}],  # verify: light
        [{"tool_call": {"name": "lookup_api", "input": {"query": "IfcWall Name"}}}],  # still verify: light
        edit({"old": "'A'", "new": "'B'"}),  # still verify: light; an iteration
        edit({"old": "'no such text'", "new": "'C'"}),  # verify: light; a missed anchor costs nothing
        say("Renamed the wall to B."),  # still verify: light
    ])
    assert produced[-1].content == "Renamed the wall to B."
    assert [r["max_tokens"] for r in model.requests] == [HEAVY, HEAVY, HEAVY, LIGHT, LIGHT, LIGHT, LIGHT, LIGHT]
    assert_transcript_valid(stack.store.transcript(row["id"]))
    texts = stack.texts(row["id"])
    assert "AttributeError" in texts[1]
    assert "Budget: fix 1 of 5" in texts[2] and "Budget: iteration 1 of 3" in texts[5]
    assert "not found" in texts[6] and "Budget" not in texts[6]
    assert "   3| print(wall.Name)" in texts[2]  # the merged script as it ran, numbered
    state = stack.store.get_session(row["id"])["state"]
    assert state["iteration_count"] == 1 and state["fix_count"] == 1
    assert "'B'" in state["current_script"]
