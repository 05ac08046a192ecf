"""A schema compiled once into one Python predicate (valid or not), for the messages of every tool round trip.

jsonschema walks a schema anew for each value (about 0.2 ms for an execute_result); the predicate compiled here
gives the same verdict in a few microseconds, for the Draft 2020-12 keywords the contract's schemas use. It only
says valid or not: a value it refuses is checked by jsonschema again, whose errors name each offending field
(validate.py). A schema with any other keyword is not compiled (None), and jsonschema checks every value.
(fastjsonschema, the compiler on PyPI, knows drafts 4, 6 and 7 only; the contract is written in Draft 2020-12.)

Each keyword mirrors jsonschema's own rule exactly (which values a keyword applies to, bool apart from the
numbers, an integral float as an integer, `re.search` for a pattern, ...), in both directions, since `not`,
`if` and `oneOf` turn a verdict round. tests/test_fast_check.py holds the two to the same verdict on every
schema of the contract, its examples and mutations of them.
"""
from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Predicate = Callable[[Any], bool]

# Keywords that never decide validity (`format` only annotates: the validators are built without a format checker).
# `$defs` only holds schemas for a `$ref`, which this module does not compile.
ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description", "default", "examples",
                         "deprecated", "readOnly", "writeOnly", "format", "contentEncoding", "contentMediaType"})


class Unsupported(ValueError):
    """The schema uses a keyword (or a form of one) this compiler does not mirror."""


def compile_schema(schema: Any) -> Predicate | None:
    """The predicate for `schema`, or None when it uses a keyword this module does not mirror."""
    try:
        return _compile(schema)
    except Unsupported:
        return None


def _compile(schema: Any) -> Predicate:
    if schema is True:
        return _always
    if schema is False:
        return _never
    if not isinstance(schema, dict):
        raise Unsupported(f"a schema must be an object or a boolean, not {type(schema).__name__}")
    checks: list[Predicate] = []
    for keyword, value in schema.items():
        if keyword in ANNOTATIONS or keyword in ("then", "else"):  # then/else: read by `if`, ignored without it
            continue
        make = _KEYWORDS.get(keyword)
        if make is None:
            raise Unsupported(keyword)
        checks.append(make(value, schema))
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    all_checks = tuple(checks)
    return lambda value: all(check(value) for check in all_checks)


def _always(_value: Any) -> bool:
    return True


def _never(_value: Any) -> bool:
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


TYPES: dict[str, Predicate] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": _is_number,
    "integer": _is_integer,
}


def _type(names: Any, _schema: dict[str, Any]) -> Predicate:
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or any(name not in TYPES for name in names):
        raise Unsupported(f"type {names!r}")
    tests = tuple(TYPES[name] for name in names)
    if len(tests) == 1:
        return tests[0]
    return lambda value: any(test(value) for test in tests)


def _properties(properties: Any, _schema: dict[str, Any]) -> Predicate:
    if not isinstance(properties, dict):
        raise Unsupported("properties must be an object")
    each = tuple((name, _compile(sub)) for name, sub in properties.items())
    return lambda value: not isinstance(value, dict) or all(
        check(value[name]) for name, check in each if name in value)


def _additional_properties(additional: Any, schema: dict[str, Any]) -> Predicate:
    if "patternProperties" in schema:
        raise Unsupported("additionalProperties beside patternProperties")
    known = frozenset(schema.get("properties", {}))
    if additional is False:
        return lambda value: not isinstance(value, dict) or all(key in known for key in value)
    check = _compile(additional)
    return lambda value: not isinstance(value, dict) or all(
        check(item) for key, item in value.items() if key not in known)


def _required(required: Any, _schema: dict[str, Any]) -> Predicate:
    if not isinstance(required, list):
        raise Unsupported("required must be an array")
    names = tuple(required)
    return lambda value: not isinstance(value, dict) or all(name in value for name in names)


def _items(items: Any, schema: dict[str, Any]) -> Predicate:
    if "prefixItems" in schema or isinstance(items, list):
        raise Unsupported("prefixItems")
    check = _compile(items)
    return lambda value: not isinstance(value, list) or all(check(item) for item in value)


def _bound(test: Callable[[Any, Any], bool], applies: Predicate) -> Callable[[Any, dict[str, Any]], Predicate]:
    def make(limit: Any, _schema: dict[str, Any]) -> Predicate:
        if not _is_number(limit):
            raise Unsupported(f"limit {limit!r}")
        return lambda value: not applies(value) or test(value, limit)
    return make


def _is_array(value: Any) -> bool:
    return isinstance(value, list)


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


def _const(constant: Any, _schema: dict[str, Any]) -> Predicate:
    return lambda value: _equal(value, constant)


def _enum(options: Any, _schema: dict[str, Any]) -> Predicate:
    if not isinstance(options, list):
        raise Unsupported("enum must be an array")
    choices = tuple(options)
    return lambda value: any(_equal(value, choice) for choice in choices)


def _pattern(pattern: Any, _schema: dict[str, Any]) -> Predicate:
    compiled = re.compile(pattern)
    return lambda value: not isinstance(value, str) or compiled.search(value) is not None


def _if(condition: Any, schema: dict[str, Any]) -> Predicate:
    test = _compile(condition)
    then = _compile(schema["then"]) if "then" in schema else _always
    otherwise = _compile(schema["else"]) if "else" in schema else _always
    return lambda value: then(value) if test(value) else otherwise(value)


def _subschemas(subschemas: Any) -> tuple[Predicate, ...]:
    if not isinstance(subschemas, list) or not subschemas:
        raise Unsupported("expected a non-empty array of schemas")
    return tuple(_compile(sub) for sub in subschemas)


def _all_of(subschemas: Any, _schema: dict[str, Any]) -> Predicate:
    checks = _subschemas(subschemas)
    return lambda value: all(check(value) for check in checks)


def _any_of(subschemas: Any, _schema: dict[str, Any]) -> Predicate:
    checks = _subschemas(subschemas)
    return lambda value: any(check(value) for check in checks)


def _one_of(subschemas: Any, _schema: dict[str, Any]) -> Predicate:
    checks = _subschemas(subschemas)
    return lambda value: sum(1 for check in checks if check(value)) == 1


def _not(subschema: Any, _schema: dict[str, Any]) -> Predicate:
    check = _compile(subschema)
    return lambda value: not check(value)


_KEYWORDS: dict[str, Callable[[Any, dict[str, Any]], Predicate]] = {
    "type": _type,
    "properties": _properties,
    "additionalProperties": _additional_properties,
    "required": _required,
    "items": _items,
    "minItems": _bound(lambda v, n: len(v) >= n, _is_array),
    "maxItems": _bound(lambda v, n: len(v) <= n, _is_array),
    "minLength": _bound(lambda v, n: len(v) >= n, _is_string),
    "maxLength": _bound(lambda v, n: len(v) <= n, _is_string),
    "minimum": _bound(lambda v, n: v >= n, _is_number),
    "maximum": _bound(lambda v, n: v <= n, _is_number),
    "exclusiveMinimum": _bound(lambda v, n: v > n, _is_number),
    "exclusiveMaximum": _bound(lambda v, n: v < n, _is_number),
    "const": _const,
    "enum": _enum,
    "pattern": _pattern,
    "if": _if,
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "not": _not,
}


def _equal(one: Any, two: Any) -> bool:
    """jsonschema's equality: bool apart from 0 and 1, sequences and mappings compared item by item."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(_equal(i, j) for i, j in zip(one, two, strict=True))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(key in two and _equal(item, two[key]) for key, item in one.items())
    return bool(_unbool(one) == _unbool(two))


_TRUE, _FALSE = object(), object()


def _unbool(value: Any) -> Any:
    if value is True:
        return _TRUE
    if value is False:
        return _FALSE
    return value
