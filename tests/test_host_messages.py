"""The typed host messages (shared_contract/host_messages.py) hold to their JSON Schemas: the same fields, the
same required ones, the same types, nested objects included; so a field added to one and not the other fails
here. And from_dict checks what it is given, naming the field that is wrong."""
from __future__ import annotations

import copy
import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import pytest

from shared_contract import SCHEMA_DIR
from shared_contract.host_messages import (
    EXTRA,
    MESSAGES,
    NESTED,
    Changes,
    Epilogue,
    ErrorInfo,
    ExecuteCommand,
    ExecuteResult,
    Failure,
    Hello,
    Message,
    ModelRef,
    WireObject,
    field_types,
    parse_host_message,
)
from shared_contract.validate import HOST_MESSAGE_TYPES, ContractError, content_hash, schema_at

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _schema_types(schema: dict[str, Any]) -> set[str]:
    """The JSON types a schema allows ("null" included), from `type`, `enum` or `const`."""
    if "type" in schema:
        kinds = schema["type"]
        return set(kinds if isinstance(kinds, list) else [kinds])
    values = schema.get("enum", [schema["const"]] if "const" in schema else [])
    found = set()
    for value in values:
        found.add("null" if value is None else "boolean" if isinstance(value, bool)
                  else "integer" if isinstance(value, int) else "string" if isinstance(value, str) else "object")
    return found


def _parts(hint: Any) -> tuple[Any, bool]:
    """(the hint without None, whether None was part of it)."""
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        args = typing.get_args(hint)
        rest = [a for a in args if a is not type(None)]
        assert len(rest) == 1, f"one type besides None, not {hint}"
        return rest[0], len(rest) < len(args)
    return hint, False


def _hint_types(hint: Any) -> set[str]:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return _schema_types({"enum": list(typing.get_args(hint))})
    if origin is tuple:
        return {"array"}
    if origin in (dict, Mapping) or hint in (dict, Mapping) or (isinstance(hint, type) and issubclass(hint, WireObject)):
        return {"object"}
    if hint in _JSON_TYPES:
        return {_JSON_TYPES[hint]}
    raise AssertionError(f"no JSON type for {hint}")


def mismatches(cls: type, schema: dict[str, Any], where: str) -> list[str]:
    """Every way the dataclass `cls` differs from the object schema `schema` (empty: they agree)."""
    problems: list[str] = []
    properties = dict(schema.get("properties") or {})
    required = set(schema.get("required") or [])
    if issubclass(cls, Message):
        assert properties.pop("type", None) == {"const": cls.TYPE}, f"{where}: type is not const {cls.TYPE!r}"
        required.discard("type")
    hints = field_types(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.name != EXTRA}
    open_object = schema.get("additionalProperties", True) is not False
    if (EXTRA in hints) != open_object:
        problems.append(f"{where}: additionalProperties is {open_object} but the class "
                        f"{'has' if EXTRA in hints else 'has no'} an `{EXTRA}` field")
    for name in sorted(set(properties) - set(fields)):
        problems.append(f"{where}: property {name} has no field")
    for name in sorted(set(fields) - set(properties)):
        problems.append(f"{where}: field {name} is not in the schema")
    for name in sorted(set(fields) & set(properties)):
        f, prop = fields[name], properties[name]
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if (name in required) == has_default:
            problems.append(f"{where}: {name} is {'required' if name in required else 'optional'} in the schema "
                            f"but {'has' if has_default else 'has no'} default")
        hint, nullable = _parts(hints[name])
        allowed = _schema_types(prop)
        if ("null" in allowed) and not nullable:
            problems.append(f"{where}: {name} may be null in the schema but its field does not take None")
        if name not in required and not nullable and not has_default:
            problems.append(f"{where}: optional {name} has no way to be absent")
        if allowed - {"null"} and _hint_types(hint) != allowed - {"null"}:
            problems.append(f"{where}: {name} is {sorted(allowed)} in the schema but {hint} in the class")
        if typing.get_origin(hint) is Literal:
            enum = prop.get("enum", [prop.get("const")])
            if sorted(typing.get_args(hint)) != sorted(enum):
                problems.append(f"{where}: {name} allows {enum} in the schema but {typing.get_args(hint)} in the class")
        nested, nested_schema = hint, prop
        if typing.get_origin(hint) is tuple:
            nested, nested_schema = typing.get_args(hint)[0], prop.get("items") or {}
            if nested_schema and _hint_types(nested) != _schema_types(nested_schema):
                problems.append(f"{where}: items of {name} are {_schema_types(nested_schema)} in the schema "
                                f"but {nested} in the class")
        if isinstance(nested, type) and issubclass(nested, WireObject):
            if schema_at(nested.SCHEMA) != nested_schema:
                problems.append(f"{where}: {name} is a {nested.__name__}, whose SCHEMA is not this property's")
            problems.extend(mismatches(nested, nested_schema, f"{where}/{name}"))
    return problems


def test_there_is_one_class_per_host_message_schema() -> None:
    on_disk = {path.stem for path in (SCHEMA_DIR / "host").glob("*.json")}
    assert set(MESSAGES) == on_disk == set(HOST_MESSAGE_TYPES)


@pytest.mark.parametrize("cls", [*MESSAGES.values(), *NESTED], ids=lambda c: c.__name__)
def test_every_dataclass_matches_its_schema(cls: type[WireObject]) -> None:
    assert mismatches(cls, schema_at(cls.SCHEMA), cls.SCHEMA) == []


def test_a_field_added_to_the_schema_or_the_class_alone_is_caught() -> None:
    schema = copy.deepcopy(schema_at(ExecuteCommand.SCHEMA))
    schema["properties"]["priority"] = {"type": "integer"}
    assert mismatches(ExecuteCommand, schema, "execute") == ["execute: property priority has no field"]

    @dataclass(frozen=True)
    class Wider(ExecuteCommand):
        TYPE: ClassVar[str] = "execute"
        priority: int | None = None

    assert mismatches(Wider, schema_at(ExecuteCommand.SCHEMA), "execute") == [
        "execute: field priority is not in the schema"]
    schema = copy.deepcopy(schema_at(ExecuteResult.SCHEMA))
    schema["properties"]["error"]["required"].append("line")
    assert "r/error: line is required in the schema but has default" in mismatches(ExecuteResult, schema, "r")
    schema["properties"]["error"]["properties"]["line"]["type"] = "string"
    assert "r/error: line is ['string'] in the schema but <class 'int'> in the class" in mismatches(ExecuteResult, schema, "r")


def _execute_result(**extra: Any) -> dict[str, Any]:
    return {"type": "execute_result", "request_id": "c1.run", "ok": False, "committed": False, "stdout": "hi\n",
            "error": {"type": "NameError", "message": "name 'x' is not defined", "line": 2,
                      "traceback": "  File \"<script>\", line 2"},
            "failures": [{"severity": "warning", "message": "w", "element_ids": [5], "source": "host"}],
            "changes": {"added": [], "modified": [7], "deleted": []}, "epilogue_stdout": None,
            "duration_ms": 12.5, "held": False, "details": {"geometry_changed": False}, **extra}


def test_wire_dicts_come_back_unchanged_through_the_dataclasses() -> None:
    epilogue = "print('report')"
    messages = [
        _execute_result(),
        {"type": "execute", "request_id": "c1.run", "mode": "automate", "code": "x = 1", "timeout_s": 30,
         "epilogue": {"code": epilogue, "sha256": content_hash(epilogue), "capability_version": "ifc-1"},
         "hold": True, "review": False, "validation": "block", "refs": [{"name": "struct", "path": "/m/s.ifc"}],
         "rules": {"name": "r", "checks": []}},
        {"type": "hello", "host_app": "ifc", "host_version": "0.8", "runtime_version": "1.0.0",
         "python_version": "3.11.2", "document": {"title": "a.ifc", "schema": "IFC4"}, "capabilities": ["hold"]},
        {"type": "error", "request_id": None, "message": "malformed"},
        {"type": "export_view_result", "request_id": "v", "ok": True, "png_base64": "AA==", "width": 1,
         "height": 1, "view": "Level 1"},
        {"type": "doctor_result", "runtime_version": "1", "host_version": "2024", "python_version": "2.7.12",
         "ok": True, "checks": [{"id": "a", "title": "A", "ok": True, "detail": "", "fallback": ""}]},
        {"type": "export_scene", "request_id": "s", "changes": {"added": [1]}, "before_of": "c1.run"},
    ]
    for message in messages:
        value = parse_host_message(message)
        assert type(value) is MESSAGES[message["type"]]
        assert value.to_dict() == message
        assert type(value).from_dict(value.to_dict()) == value


def test_nested_objects_are_typed_and_open_objects_keep_what_they_carry() -> None:
    result = ExecuteResult.from_dict(_execute_result())
    assert result.error == ErrorInfo("NameError", "name 'x' is not defined", 2, "  File \"<script>\", line 2")
    assert result.changes == Changes((), (7,), ())
    assert result.failures == (Failure("warning", "w", (5,), {"source": "host"}),)
    command = ExecuteCommand("r.run", "automate", "x", 5, Epilogue("p", content_hash("p"), "v1"), hold=True,
                             refs=(ModelRef("s", "/s.ifc"),))
    assert command.holds and not ExecuteCommand("r.run", "collect", "x", 5, hold=True).holds
    assert command.to_dict()["refs"] == [{"name": "s", "path": "/s.ifc"}]
    assert ErrorInfo("Timeout", "too long").to_dict() == {"type": "Timeout", "message": "too long", "line": None,
                                                          "traceback": ""}


def test_from_dict_names_the_field_that_is_wrong() -> None:
    with pytest.raises(ContractError, match=r"timeout_s: 'soon' is not of type 'number'"):
        ExecuteCommand.from_dict({"type": "execute", "request_id": "a", "mode": "collect", "code": "", "timeout_s": "soon"})
    with pytest.raises(ContractError, match=r"error/line: 'two' is not of type 'integer', 'null'"):
        ExecuteResult.from_dict(_execute_result(error={"type": "E", "message": "m", "line": "two"}))
    with pytest.raises(ContractError, match=r"changes: 'deleted' is a required property"):
        ExecuteResult.from_dict(_execute_result(changes={"added": [], "modified": []}))
    with pytest.raises(ContractError, match=r"\(top level\): 'python_version' is a required property"):
        Hello.from_dict({"type": "hello", "host_app": "ifc", "host_version": "1", "runtime_version": "1",
                         "document": {"title": "t"}})
    with pytest.raises(ContractError, match=r"invalid ErrorInfo: message: 3 is not of type 'string'"):
        ErrorInfo.from_dict({"type": "E", "message": 3})
    with pytest.raises(ContractError, match="unknown message type 'hullo'"):
        parse_host_message({"type": "hullo"})
