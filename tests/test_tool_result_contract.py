"""The person's copy of a tool result is one typed structure, pinned by shared_contract/tool_result.json."""
from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from cloud.assembly import run_session
from cloud.config import Settings
from cloud.store import Store
from cloud.tools.result import ScriptResult, ToolResult
from tests.support.local_host import local_link
from tests.support.memory_model import MemoryModel
from tests.support.spine import automate, collect, edit, say

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "shared_contract" / "tool_result.json").read_text())
VALIDATOR = Draft202012Validator(SCHEMA)


def _errors(instance: dict) -> list[str]:
    return [e.message for e in VALIDATOR.iter_errors(instance)]


def test_the_schema_is_itself_valid_and_names_exactly_the_typed_fields():
    Draft202012Validator.check_schema(SCHEMA)
    typed = {f.name for f in dataclasses.fields(ScriptResult)}
    assert typed == set(SCHEMA["$defs"]["script_run"]["properties"])
    assert {f.name for f in dataclasses.fields(ToolResult)} == set(SCHEMA["else"]["properties"])


def test_every_result_of_a_real_run_fits_the_schema_as_streamed_and_as_stored(tmp_path):
    store = Store(tmp_path / "nexus.db")
    link, _ = local_link()
    row = store.get_session(store.create_session("alice", "h_local", "scripted:memory", {}))
    produced = list(run_session(store, Settings(tool_timeout_s=5), MemoryModel([
        collect("print('x' * 10)"),
        automate("doc.add('Wall', 'W1')\nprint('added')"),  # commits, with an image of the view
        automate("doc.elements[999]"),  # fails
        edit({"old": "nothing like this", "new": "y"}),  # a missed anchor: a plain refusal
        [{"tool_call": {"name": "capture_view", "input": {"view": "Level 1"}}}],
        [{"tool_call": {"name": "lookup_api", "input": {"query": "walls"}}}],
        say("done"),
    ]), link, row, "go", threading.Event()))
    results = [c.metadata for c in produced if c.type == "Metadata" and c.metadata["kind"] == "tool_result"]
    assert len(results) == 6
    for result in results:
        person = {k: v for k, v in result.items() if k != "kind"}
        assert _errors(person) == [], person
        stored = store.get_result(row["id"], person["tool_call_id"])
        if stored is not None:
            assert stored == person and _errors(stored) == []
    committed = results[1]
    assert committed["committed"] is True and committed["image"]["width"] > 0


@pytest.mark.parametrize("broken", [
    {"drop": "stdout_truncated"},
    {"set": ("stdout", None)},
    {"set": ("image", {"image_id": "i", "width": 0, "height": 1, "view": "v"})},
    {"set": ("surprise", 1)},
])
def test_the_schema_refuses_a_script_result_that_breaks_it(broken):
    person = ScriptResult("c1", "execute_data_collection", True, "ok", mode="collect", stdout="1\n").to_json()
    assert _errors(person) == []
    if "drop" in broken:
        del person[broken["drop"]]
    else:
        key, value = broken["set"]
        person[key] = value
    assert _errors(person) != []


def test_a_plain_result_carries_the_common_fields_only():
    person = ToolResult("c1", "lookup_api", True, "answer").to_json()
    assert _errors(person) == [] and "image" not in person
    assert _errors({**person, "stdout": "x"}) != []
