"""The compiled predicates (shared_contract/fast_check.py) give jsonschema's verdict on every schema of the
contract: a value built to fit each schema, and many ways of breaking it, are judged the same by both; a keyword
the compiler does not mirror leaves the schema to jsonschema; and `check` still names what is wrong."""
from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from shared_contract import SCHEMA_DIR
from shared_contract.fast_check import compile_schema
from shared_contract.validate import ContractError, check, schema_at, tool_definitions, validate_tool_input

SCALARS: list[Any] = [None, True, False, 0, 1, -1, 2.0, 1.5, "", "x", "a" * 70, [], {}, ["x"], {"k": "v"}]
PATTERN_CANDIDATES = ["ifc", "revit", "a", "abc_1", "0" * 64, "h_0123456789ab"]
SCHEMAS = sorted(str(p.relative_to(SCHEMA_DIR)) for p in SCHEMA_DIR.glob("host/*.json")) + ["stream_chunk.json"]
# Where the first `enum` value alone cannot fit (its `if` asks for more), values that do.
MORE_FITTING: dict[str, list[Any]] = {"stream_chunk.json": [
    {"type": "Message", "content": "hi"}, {"type": "Metadata", "content": "", "metadata": {"kind": "run"}},
    {"type": "ToolCall", "content": "", "metadata": {"tool_call_id": "c1", "name": "lookup_api", "input": {}}}]}


def fitting(schema: Any, depth: int = 0) -> Any:
    """A value meant to fit `schema` (every property given, bounds met, patterns matched where a candidate does)."""
    if not isinstance(schema, dict):
        return "x"
    if "const" in schema:
        return copy.deepcopy(schema["const"])
    if "enum" in schema:
        return copy.deepcopy(schema["enum"][0])
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object" or "properties" in schema:
        return {name: fitting(sub, depth + 1) for name, sub in schema.get("properties", {}).items()
                if depth < 4 or name in schema.get("required", [])}
    if kind == "array":
        return [fitting(schema.get("items", {}), depth + 1) for _ in range(max(1, schema.get("minItems", 1)))]
    if kind == "string":
        if "pattern" in schema:
            return next((c for c in PATTERN_CANDIDATES if re.search(schema["pattern"], c)), "x")
        return "a" * max(1, schema.get("minLength", 1))
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0) + 1)
        return low if kind == "integer" else low + 0.5
    if kind == "boolean":
        return True
    return None


def broken(schema: Any, value: Any, depth: int = 0) -> Iterator[Any]:
    """`value`, and ways of breaking it: wrong types, missing and extra properties, bounds crossed."""
    yield value
    yield from SCALARS
    if not isinstance(schema, dict) or depth > 3:
        return
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        yield {**value, "zz_not_a_property": 1}
        for name in list(value):
            yield {k: v for k, v in value.items() if k != name}
            for variant in broken(properties.get(name, {}), value[name], depth + 1):
                yield {**value, name: variant}
        for name, sub in properties.items():
            if name not in value:
                yield {**value, name: fitting(sub, depth + 1)}
    if isinstance(value, list):
        items = schema.get("items", {})
        yield []
        if schema.get("maxItems", 2) <= 64:  # a longer cap is crossed the same way; its lists only cost time
            yield value * (schema.get("maxItems", 2) + 1)
        if value:
            for variant in broken(items, value[0], depth + 1):
                yield [variant, *value[1:]]
    if isinstance(value, str):
        for bound in ("minLength", "maxLength"):
            if bound in schema:
                yield from ("a" * max(0, schema[bound] + d) for d in (-1, 0, 1))
        yield value + "!"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for bound in ("minimum", "maximum", "exclusiveMinimum"):
            if bound in schema:
                yield from (schema[bound] + d for d in (-1, -0.5, 0, 0.5, 1))
        yield float(value)


def _agree(schema: dict[str, Any], values: list[Any]) -> tuple[int, int]:
    predicate = compile_schema(schema)
    assert predicate is not None, "the contract's schemas use only keywords the compiler mirrors"
    validator = Draft202012Validator(schema)
    valid = 0
    for value in values:
        expected = validator.is_valid(value)
        assert predicate(value) is expected, f"fast check says {not expected} for {value!r}"
        valid += expected
    return valid, len(values) - valid


@pytest.mark.parametrize("location", SCHEMAS)
def test_every_host_message_schema_gets_jsonschemas_verdict(location: str) -> None:
    schema = schema_at(location)
    values = [v for base in [fitting(schema), *MORE_FITTING.get(location, [])] for v in broken(schema, base)]
    valid, invalid = _agree(schema, values)
    assert valid >= 1 and invalid >= 10  # both verdicts were really put to the test


@pytest.mark.parametrize("tool", [t["name"] for t in tool_definitions()])
def test_every_tool_input_schema_gets_jsonschemas_verdict(tool: str) -> None:
    schema = next(t["input_schema"] for t in tool_definitions() if t["name"] == tool)
    valid, invalid = _agree(schema, list(broken(schema, fitting(schema))))
    assert valid >= 1 and invalid >= 10


KEYWORD_CASES: list[tuple[dict[str, Any], list[Any]]] = [
    ({"type": "integer"}, [1, 1.0, 1.5, True, "1", None]),
    ({"type": ["string", "null"]}, ["a", None, 0, False]),
    ({"type": "number", "minimum": 0, "exclusiveMaximum": 5}, [0, -0.1, 4.9, 5, 5.0, True, "3"]),
    ({"const": True}, [True, 1, 1.0, "true", False]),
    ({"const": 1}, [1, 1.0, True, "1"]),
    ({"enum": ["a", 0, None, [1, False]]}, ["a", 0, 0.0, False, None, [1, False], [1, 0], [True, False]]),
    ({"const": {"a": [1]}}, [{"a": [1]}, {"a": [True]}, {"a": [1], "b": 2}, {"a": [1.0]}]),
    ({"pattern": "^[a-z]{2}$"}, ["ab", "abc", "Ab", 12, None]),
    ({"pattern": "b"}, ["abc", "xyz"]),  # search, not match
    ({"minLength": 2, "maxLength": 3}, ["a", "ab", "abcd", "\u00e9\u00e9", 5]),
    ({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2}, [[], ["a"], ["a", 1], ["a"] * 3]),
    ({"properties": {"ok": {"const": True}}, "if": {"properties": {"ok": {"const": True}}},
      "then": {"required": ["png"]}, "else": {"required": ["error"]}},
     [{"ok": True, "png": "x"}, {"ok": True}, {"ok": False, "error": 1}, {"ok": False}, {}, {"png": "x"}, "x"]),
    ({"then": {"required": ["a"]}}, [{}, {"a": 1}]),  # `then` without `if` decides nothing
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, [1, 3, 2.5, "x"]),
    ({"anyOf": [{"type": "string"}, {"type": "null"}], "not": {"const": "no"}}, ["yes", "no", None, 1]),
    ({"allOf": [{"required": ["a"]}, {"additionalProperties": {"type": "integer"}}]},
     [{"a": 1}, {"a": "x"}, {"b": 1}, {"a": 1, "b": 2.0}, {"a": 1, "b": True}]),
    ({"properties": {"a": {}}, "additionalProperties": False}, [{}, {"a": None}, {"b": 1}, []]),
    (False, [None, {}]),
    (True, [None, {}]),
]


@pytest.mark.parametrize("schema,values", KEYWORD_CASES)
def test_each_keyword_mirrors_jsonschema_at_its_edges(schema: dict[str, Any], values: list[Any]) -> None:
    if isinstance(schema, bool):
        predicate = compile_schema(schema)
        assert predicate is not None and all(predicate(v) is schema for v in values)
    else:
        _agree(schema, values)


@pytest.mark.parametrize("schema", [{"$ref": "#/$defs/a", "$defs": {"a": {}}}, {"patternProperties": {"^a": {}}},
                                    {"prefixItems": [{}]}, {"type": "color"}, {"unevaluatedProperties": False},
                                    {"properties": {"a": {"dependentRequired": {"a": ["b"]}}}}])
def test_a_keyword_not_mirrored_leaves_the_schema_to_jsonschema(schema: dict[str, Any]) -> None:
    assert compile_schema(schema) is None


def test_a_refused_value_is_still_described_field_by_field() -> None:
    with pytest.raises(ContractError, match=r"invalid execute_result message: .*stdout: 5 is not of type 'string'"):
        check("host/execute_result.json", {"type": "execute_result", "request_id": "c.run", "ok": True,
                                           "stdout": 5}, "execute_result message")
    with pytest.raises(ContractError, match=r"invalid input for execute_data_collection: code"):
        validate_tool_input("execute_data_collection", {"code": 5})


def test_a_valid_message_is_judged_without_walking_jsonschema() -> None:
    import shared_contract.validate as validate

    message = {"type": "execute_result", "request_id": "c.run", "ok": True, "stdout": "6\n", "committed": False,
               "failures": [], "changes": {"added": [], "modified": [], "deleted": []}, "duration_ms": 3}
    validate._validator.cache_clear()
    validate.validate_host_message(message)
    assert validate._validator.cache_info().currsize == 0  # jsonschema's validator was not even built
    with pytest.raises(ContractError, match="stdout"):
        validate.validate_host_message({**message, "stdout": 6})
    assert validate._validator.cache_info().currsize == 1  # a refused one is described by jsonschema
