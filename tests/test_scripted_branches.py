"""The scripted model's optional branches: a turn may depend on the previous tool result (ok, committed,
discarded, ran), read from that result's words as the model receives them; plain scripts play as before."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from cloud.assembly import run_session
from cloud.config import Settings
from cloud.store import Store
from cloud.transcript import model_view
from cloud.vendors.base import ModelError
from cloud.vendors.scripted import ScriptedModel
from tests.support.local_host import local_link
from tests.support.spine import automate, collect, say

DEMO_DIR = Path(__file__).resolve().parents[1] / "cloud" / "demo"

BRANCHED = [
    automate("doc.add('Door', 'BRANCH-D1', 'Level 1')\nprint('added')"),
    {"branches": [
        {"when": {"committed": True}, "turn": say("COMMITTED branch")},
        {"when": {"discarded": True}, "turn": say("DISCARDED branch")},
        {"when": {"ran": False}, "turn": say("NOTHING RAN branch")},
        {"turn": say("OTHERWISE branch")},
    ]},
]


def _final_text(store: Store, policy: str, turns: list, link_knobs: dict | None = None) -> tuple[str, list]:
    link, host = local_link(**(link_knobs or {}))
    session_id = store.create_session("alice", "h_local", "scripted:memory", {})
    store.update_session(session_id, policy=policy)
    row = store.get_session(session_id)
    model = ScriptedModel.from_turns(turns)
    produced = list(run_session(store, Settings(tool_timeout_s=5, approval_timeout_s=1), model, link, row, "go",
                                threading.Event()))
    complete = [c for c in produced if c.type == "Complete"]
    assert complete, [c.to_json() for c in produced]
    return complete[-1].content, store.transcript(session_id)


def test_a_branch_plays_what_the_previous_result_says_under_each_policy(tmp_path):
    store = Store(tmp_path / "nexus.db")
    assert _final_text(store, "auto", BRANCHED)[0] == "COMMITTED branch"
    assert _final_text(store, "readonly", BRANCHED)[0] == "NOTHING RAN branch"
    # Under ask nobody decides within the (1 s) approval timeout: the held change is discarded.
    assert _final_text(store, "ask", BRANCHED)[0] == "DISCARDED branch"
    failing = [automate("doc.elements[999]"), BRANCHED[1]]
    assert _final_text(store, "auto", failing)[0] == "OTHERWISE branch"


def test_ok_reads_an_inspection_and_a_missing_branch_is_said_plainly(tmp_path):
    store = Store(tmp_path / "nexus.db")
    turns = [collect("print(1)"), {"branches": [{"when": {"ok": False}, "turn": say("failed")}]}]
    text, _ = _final_text(store, "auto", turns)
    assert text == "The scripted conversation has no branch for this result (ok=true, committed=false, " \
                   "discarded=false, ran=true)."
    turns[1]["branches"].append({"when": {"ok": True, "committed": False}, "turn": say("inspected")})
    assert _final_text(store, "auto", turns)[0] == "inspected"


def test_a_branching_turn_keeps_its_place_for_the_next_turn(tmp_path):
    store = Store(tmp_path / "nexus.db")
    turns = [automate("doc.add('Door', 'X')"),
             {"branches": [{"when": {"committed": True}, "turn": automate("doc.add('Door', 'Y')", "again")}]},
             say("third turn")]
    text, transcript = _final_text(store, "auto", turns)
    assert text == "third turn"
    assert [e["role"] for e in model_view(transcript)] == ["user", "assistant", "tool", "assistant", "tool",
                                                           "assistant"]


@pytest.mark.parametrize(("turn", "problem"), [
    ({"branches": []}, "a branching turn is"),
    ({"branches": [{"when": {"commited": True}, "turn": []}]}, "condition 'commited'"),
    ({"branches": [{"when": {"ok": "yes"}, "turn": []}]}, "condition 'ok'"),
    ({"branches": [{"when": {"ok": True}}]}, "branch 0: expected"),
    ({"branches": [{"turn": [{"speech": "x"}]}]}, "branch 0: each item is one of"),
    ({"branches": [], "extra": 1}, "a branching turn is"),
])
def test_a_malformed_branch_is_refused_naming_what_is_wrong(turn, problem):
    with pytest.raises(ModelError, match=problem):
        ScriptedModel.from_turns([turn])


def test_the_demo_scripts_load_and_every_landing_example_has_its_own():
    chat = (Path(__file__).resolve().parents[1] / "cloud" / "templates" / "chat.html").read_text()
    for name in ("count_doors.json", "unrated_walls.json", "renumber_doors.json"):
        assert f'data-script="{name}"' in chat
        ScriptedModel(str(DEMO_DIR / name))
    renumber = json.loads((DEMO_DIR / "renumber_doors.json").read_text())["turns"]
    assert any(isinstance(t, dict) for t in renumber)  # it branches on what really happened
