"""shared_contract/: every host message and tool input, valid and invalid, with errors that name the field."""
from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from cloud.contract import (
    HOST_MESSAGE_TYPES,
    ContractError,
    tool_definitions,
    validate_chunk,
    validate_host_message,
    validate_tool_input,
)
from shared_contract import SCHEMA_DIR

EMPTY_CHANGES = {"added": [], "modified": [], "deleted": []}
EPILOGUE = {"code": "print(1)", "sha256": "a" * 64, "capability_version": "ifc-1"}

VALID_HOST_MESSAGES = {
    "hello": {"type": "hello", "host_app": "revit", "host_version": "2026", "runtime_version": "0.1",
              "python_version": "2.7.12", "document": {"title": "Tower.rvt", "path": "C:/x.rvt"}},
    "welcome": {"type": "welcome", "host_id": "h_1"},
    "execute": {"type": "execute", "request_id": "c1.run", "mode": "automate", "code": "x = 1",
                "epilogue": EPILOGUE, "timeout_s": 300, "hold": True},
    "execute_result": {"type": "execute_result", "request_id": "c1.run", "ok": False, "committed": False,
                       "stdout": "", "error": {"type": "KeyError", "message": "'x'", "line": 3, "traceback": "..."},
                       "failures": [{"severity": "warning", "message": "Wall overlaps", "element_ids": [5]}],
                       "changes": EMPTY_CHANGES, "epilogue_stdout": None, "duration_ms": 12.5},
    "export_view": {"type": "export_view", "request_id": "c1.view", "view": "Level 1", "element_ids": [1, 2],
                    "max_px": 1568},
    "export_view_result": {"type": "export_view_result", "request_id": "c1.view", "ok": True, "png_base64": "iVBO",
                           "width": 10, "height": 8, "view": "Level 1"},
    "decide": {"type": "decide", "request_id": "c1.run", "decision": "discard"},
    "decided": {"type": "decided", "request_id": "c1.run", "decision": "keep", "by": "the person in Revit"},
    "abort": {"type": "abort", "request_id": "c1.run"},
    "aborted": {"type": "aborted", "request_id": "c1.run", "state": "none", "message": "nothing to abort"},
    "ping": {"type": "ping", "nonce": "n"},
    "pong": {"type": "pong"},
    "error": {"type": "error", "request_id": None, "message": "bad"},
    "context": {"type": "context", "request_id": "run1.context"},
    "context_result": {"type": "context_result", "request_id": "run1.context", "ok": True,
                       "context": {"document": "Tower", "levels": [{"name": "Level 1", "elevation": 0.0}],
                                   "selection": [5, 6], "counts": {"IfcDoor": 12}}},
    "doctor": {"type": "doctor", "request_id": "doctor-1.doctor"},
    "doctor_result": {"type": "doctor_result", "request_id": "doctor-1.doctor", "runtime_version": "0.3.0",
                      "host_version": "Revit 2026 (26.0)", "python_version": "2.7.12 (IronPython)", "ok": False,
                      "checks": [{"id": "webview2", "title": "WebView2", "ok": False, "detail": "too old",
                                  "fallback": "Open chat in browser"}]},
    "export_scene": {"type": "export_scene", "request_id": "c1.scene", "view": None, "element_ids": [5],
                     "changes": {"added": [5], "modified": [], "deleted": [9]}, "before_of": "c1.run", "held_of": "c1.run",
                     "refs": [{"name": "MEP.ifc", "path": "/models/MEP.ifc"}], "max_bytes": 2097152},
    "export_scene_result": {"type": "export_scene_result", "request_id": "c1.scene", "ok": True, "glb_base64": "Z2xU",
                            "view": "Level 1", "nodes": 2, "counts": {"added": 1, "modified": 0, "deleted": 1},
                            "references": {"MEP.ifc": 0}},
    "show_elements": {"type": "show_elements", "request_id": "show-1.show_elements", "element_ids": [312, 5077]},
    "show_elements_result": {"type": "show_elements_result", "request_id": "show-1.show_elements", "ok": True,
                             "shown": [312], "missing": [5077], "zoomed": True, "view": "Level 1",
                             "document": "Tower"},
}

# (message type, change to a valid example, the field the error must name)
INVALID_HOST_MESSAGES = [
    ("hello", {"host_app": "archicad"}, "host_app"),  # well-formed, but no provider on this server
    ("hello", {"host_app": "Revit 2026"}, "host_app"),
    ("hello", {"document": {}}, "title"),
    ("hello", {"python_version": ""}, "python_version"),
    ("hello", {"surprise": 1}, "surprise"),
    ("welcome", {"host_id": ""}, "host_id"),
    ("execute", {"mode": "destroy"}, "mode"),
    ("execute", {"timeout_s": 0}, "timeout_s"),
    ("execute", {"epilogue": {**EPILOGUE, "sha256": "not-a-hash"}}, "epilogue/sha256"),
    ("execute", {"hold": "yes"}, "hold"),
    ("execute_result", {"ok": "true"}, "ok"),
    ("execute_result", {"changes": {"added": ["x"], "modified": [], "deleted": []}}, "changes/added/0"),
    ("execute_result", {"failures": [{"severity": "fatal", "message": "x"}]}, "failures/0/severity"),
    ("execute_result", {"duration_ms": -1}, "duration_ms"),
    ("execute_result", {"error": {"type": "E"}}, "error"),
    ("export_view", {"max_px": 8}, "max_px"),
    ("export_view", {"element_ids": ["a"]}, "element_ids/0"),
    ("export_view_result", {"width": -1}, "width"),
    ("decide", {"decision": "maybe"}, "decision"),
    ("decided", {"decision": "later"}, "decision"),
    ("abort", {"reason": "cancel"}, "reason"),
    ("aborted", {"state": "killed"}, "state"),
    ("ping", {"nonce": 1}, "nonce"),
    ("pong", {"extra": True}, "extra"),
    ("error", {"message": ""}, "message"),
    ("context", {"request_id": ""}, "request_id"),
    ("context_result", {"context": {"levels": []}}, "document"),
    ("context_result", {"context": {"document": "T", "selection": ["a"]}}, "context/selection/0"),
    ("doctor", {"show": True}, "show"),
    ("doctor_result", {"checks": []}, "checks"),
    ("show_elements", {"element_ids": []}, "element_ids"),
    ("show_elements", {"element_ids": ["312"]}, "element_ids/0"),
    ("show_elements_result", {"shown": ["a"]}, "shown/0"),
    ("show_elements_result", {"ok": False}, "error"),
    ("doctor_result", {"checks": [{"id": "x", "title": "X", "ok": "yes", "detail": "", "fallback": ""}]}, "checks/0/ok"),
]

MISSING_REQUIRED = {
    "hello": "document", "welcome": "host_id", "execute": "code", "execute_result": "changes",
    "export_view": "max_px", "export_view_result": "request_id", "decide": "decision", "decided": "decision", "error": "message",
    "context": "request_id", "context_result": "ok", "doctor": "request_id", "doctor_result": "checks",
    "abort": "request_id", "aborted": "state", "export_scene": "request_id", "export_scene_result": "ok",
    "show_elements": "element_ids", "show_elements_result": "ok",
}


def test_every_schema_is_valid_draft_2020_12_and_every_host_message_has_one():
    paths = sorted(SCHEMA_DIR.rglob("*.json"))
    assert len(paths) >= 14
    for path in paths:
        schema = json.loads(path.read_text())
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema", path
        Draft202012Validator.check_schema(schema if "input_schema" not in schema else schema["input_schema"])
    assert {p.stem for p in (SCHEMA_DIR / "host").glob("*.json")} == set(HOST_MESSAGE_TYPES)
    assert set(VALID_HOST_MESSAGES) == set(HOST_MESSAGE_TYPES)


@pytest.mark.parametrize("kind", sorted(VALID_HOST_MESSAGES))
def test_valid_host_messages_pass(kind):
    assert validate_host_message(VALID_HOST_MESSAGES[kind]) == VALID_HOST_MESSAGES[kind]


@pytest.mark.parametrize("kind, change, field", INVALID_HOST_MESSAGES,
                         ids=[f"{k}-{f}" for k, _, f in INVALID_HOST_MESSAGES])
def test_invalid_host_messages_are_refused_naming_the_field(kind, change, field):
    with pytest.raises(ContractError) as refused:
        validate_host_message({**VALID_HOST_MESSAGES[kind], **change})
    assert f"invalid {kind} message" in str(refused.value)
    assert field in str(refused.value)


@pytest.mark.parametrize("kind, field", sorted(MISSING_REQUIRED.items()))
def test_a_missing_required_field_is_named(kind, field):
    message = {k: v for k, v in VALID_HOST_MESSAGES[kind].items() if k != field}
    with pytest.raises(ContractError) as refused:
        validate_host_message(message)
    assert f"'{field}' is a required property" in str(refused.value)


def test_a_successful_export_needs_its_image_fields():
    with pytest.raises(ContractError) as refused:
        validate_host_message({"type": "export_view_result", "request_id": "r", "ok": True})
    assert "png_base64" in str(refused.value)
    validate_host_message({"type": "export_view_result", "request_id": "r", "ok": False, "error": "no such view"})


@pytest.mark.parametrize("message, problem", [
    ([], "expected a JSON object"), ("hello", "expected a JSON object"), (None, "expected a JSON object"),
    ({}, "unknown message type None"), ({"type": "shutdown"}, "unknown message type 'shutdown'"),
])
def test_messages_that_are_not_host_messages_at_all(message, problem):
    with pytest.raises(ContractError) as refused:
        validate_host_message(message)
    assert problem in str(refused.value)


def test_the_six_canonical_tools_are_defined_with_descriptions():
    tools = {t["name"]: t for t in tool_definitions()}
    assert list(tools) == ["capture_view", "execute_data_collection", "execute_task_automation", "find_skill",
                           "lookup_api", "run_skill"]  # the skill tools are always offered (docs/skills.md)
    for tool in tools.values():
        assert len(tool["description"]) > 40 and tool["input_schema"]["type"] == "object"
        Draft202012Validator.check_schema(tool["input_schema"])


VALID_TOOL_INPUTS = [
    ("execute_data_collection", {"code": "print(1)"}),
    ("execute_task_automation", {"code": "x = 1"}),
    ("execute_task_automation", {"edits": [{"old": "x = 1", "new": "x = 2"}, {"old": "y", "new": "", "line": 3}]}),
    ("capture_view", {}),
    ("capture_view", {"view": "Level 1", "element_ids": [1, 2]}),
    ("lookup_api", {"query": "ifcopenshell.api.root.create_entity"}),
    ("find_skill", {"query": "rename doors"}),
    ("run_skill", {"name": "Prefix doors", "args": {"PREFIX": "D-", "COUNT": 2, "DRY": False}}),
    ("run_skill", {"name": "Prefix doors"}),
]

INVALID_TOOL_INPUTS = [
    ("execute_data_collection", {}, "'code' is a required property"),
    ("execute_data_collection", {"code": ""}, "code"),
    ("execute_data_collection", {"code": 5}, "code"),
    ("execute_data_collection", {"code": "x", "mode": "automate"}, "'mode' was unexpected"),
    ("execute_task_automation", {}, "exactly one of `code`"),
    ("execute_task_automation", {"code": "x", "edits": [{"old": "a", "new": "b"}]}, "exactly one of `code`"),
    ("execute_task_automation", {"edits": []}, "edits"),
    ("execute_task_automation", {"edits": [{"old": "a"}]}, "edits/0"),
    ("execute_task_automation", {"edits": [{"old": "", "new": "b"}]}, "edits/0/old"),
    ("execute_task_automation", {"edits": [{"old": "a", "new": "b", "line": 0}]}, "edits/0/line"),
    ("execute_task_automation", {"edits": [{"old": "a", "new": "b", "at": 1}]}, "edits/0"),
    ("capture_view", {"view": ""}, "view"),
    ("capture_view", {"element_ids": "all"}, "element_ids"),
    ("capture_view", {"element_ids": [1.5]}, "element_ids/0"),
    ("lookup_api", {}, "'query' is a required property"),
    ("lookup_api", {"query": "x"}, "query"),
    ("find_skill", {}, "'query' is a required property"),
    ("find_skill", {"query": ""}, "query"),
    ("run_skill", {"args": {}}, "'name' is a required property"),
    ("run_skill", {"name": "x", "args": {"A": [1]}}, "args/A"),
    ("run_skill", {"name": "x", "code": "print(1)"}, "'code' was unexpected"),
]


def test_every_tool_has_valid_and_invalid_examples_here():
    names = {t["name"] for t in tool_definitions()}
    assert {n for n, _ in VALID_TOOL_INPUTS} == names
    assert {n for n, _, _ in INVALID_TOOL_INPUTS} == names


@pytest.mark.parametrize("name, arguments", VALID_TOOL_INPUTS)
def test_valid_tool_inputs_pass(name, arguments):
    assert validate_tool_input(name, arguments) == arguments


@pytest.mark.parametrize("name, arguments, named", INVALID_TOOL_INPUTS)
def test_invalid_tool_inputs_are_refused_naming_the_field(name, arguments, named):
    with pytest.raises(ContractError) as refused:
        validate_tool_input(name, arguments)
    assert f"invalid input for {name}" in str(refused.value) and named in str(refused.value)


def test_unknown_tools_and_non_object_arguments_are_refused():
    with pytest.raises(ContractError, match="unknown tool 'rm_rf'; available: capture_view"):
        validate_tool_input("rm_rf", {})
    with pytest.raises(ContractError, match="expected a JSON object"):
        validate_tool_input("capture_view", ["Level 1"])


@pytest.mark.parametrize("chunk", [
    {"type": "Message", "content": "hi"},
    {"type": "Metadata", "content": "", "metadata": {"kind": "budget", "tool_call_id": "c"}},
    {"type": "ToolCall", "content": "capture_view", "metadata": {"tool_call_id": "c", "name": "capture_view",
                                                                 "input": {}}},
    {"type": "ToolInputDelta", "content": "{\"co", "metadata": {"tool_call_id": "c"}},
    {"type": "Error", "content": "cancelled", "metadata": {"cancelled": True}},
])
def test_valid_stream_chunks_pass(chunk):
    assert validate_chunk(chunk) == chunk


@pytest.mark.parametrize("chunk, named", [
    ({"type": "Shout", "content": "x"}, "type"),
    ({"type": "Message"}, "'content' is a required property"),
    ({"type": "Metadata", "content": ""}, "'metadata' is a required property"),
    ({"type": "Metadata", "content": "", "metadata": {"kind": "gossip"}}, "metadata/kind"),
    ({"type": "ToolCall", "content": "x", "metadata": {"tool_call_id": "c"}}, "metadata"),
    ({"type": "Message", "content": "x", "extra": 1}, "extra"),
])
def test_invalid_stream_chunks_are_refused_naming_the_field(chunk, named):
    with pytest.raises(ContractError) as refused:
        validate_chunk(chunk)
    assert named in str(refused.value)


def test_the_production_contract_lists_no_host_apps_and_the_orchestrator_accepts_only_those_it_serves(monkeypatch):
    from cloud.hosts import registry
    from shared_contract.validate import validate_host_message as validate_wire_message

    schema = json.loads((SCHEMA_DIR / "host" / "hello.json").read_text())
    assert "enum" not in schema["properties"]["host_app"]
    test_hello = {**VALID_HOST_MESSAGES["hello"], "host_app": "test"}
    assert validate_wire_message(test_hello) == test_hello
    assert validate_host_message(test_hello) == test_hello  # the test suite registered its provider
    monkeypatch.delitem(registry._registered, "test")
    with pytest.raises(ContractError, match="host_app: no capability provider for 'test' on this server"):
        validate_host_message(test_hello)


def test_the_content_hash_is_the_sha256_of_the_utf8_text():
    import hashlib

    from cloud.contract import content_hash

    code = "print('Tür')\n"
    assert content_hash(code) == hashlib.sha256(code.encode("utf-8")).hexdigest()
