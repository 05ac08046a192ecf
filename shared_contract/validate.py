"""Validation against the schemas in this package, and the content hash that stamps scripts.

Importable by every party to the wire contract (the orchestrator and the host runtimes) without
importing any of them: this module needs only the standard library and jsonschema. A value is first put to
its schema's compiled predicate (fast_check.py, a few microseconds); only one that fails it is walked by
jsonschema, for the errors that name what is wrong, and only then is jsonschema imported (a tenth of a second
that a host's processes, which only ever check valid messages, never pay). That the schema files themselves are
valid JSON Schema is checked by the tests (tests/test_contract.py), not each time a process reads one.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from shared_contract import SCHEMA_DIR
from shared_contract.fast_check import Predicate, compile_schema

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

HOST_MESSAGE_TYPES = (
    "hello", "welcome", "execute", "execute_result", "export_view", "export_view_result",
    "decide", "decided", "ping", "pong", "error", "context", "context_result",
    "doctor", "doctor_result", "abort", "aborted", "export_scene", "export_scene_result",
    "show_elements", "show_elements_result",
)


class ContractError(ValueError):
    """A message or tool input that does not match its schema; the message names the offending field."""


def content_hash(code: str) -> str:
    """The sha256 (hex) that stamps a script sent to a host; the host recomputes it before running."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


@cache
def _schema_file(relative_path: str) -> dict[str, Any]:
    return json.loads((SCHEMA_DIR / relative_path).read_text(encoding="utf-8"))


def schema_at(location: str) -> dict[str, Any]:
    """The schema at `file.json` or `file.json#/json/pointer` (a part of one, e.g. a nested object)."""
    relative_path, _, pointer = location.partition("#")
    node: Any = _schema_file(relative_path)
    for part in (p for p in pointer.split("/") if p):
        node = node[int(part)] if isinstance(node, list) else node[part.replace("~1", "/").replace("~0", "~")]
    return node


@cache
def _validator(location: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema_at(location))


@cache
def _predicate(location: str) -> Predicate | None:
    return compile_schema(schema_at(location))


@cache
def tool_definitions() -> tuple[dict[str, Any], ...]:
    """The canonical tool definitions {name, description, input_schema}, in a stable order."""
    out = []
    for path in sorted((SCHEMA_DIR / "tools").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out.append({"name": data["name"], "description": data["description"], "input_schema": data["input_schema"]})
    return tuple(out)


@cache
def _tool_validator(name: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(next(t["input_schema"] for t in tool_definitions() if t["name"] == name))


@cache
def _tool_predicates() -> dict[str, Predicate | None]:
    return {t["name"]: compile_schema(t["input_schema"]) for t in tool_definitions()}


def describe_errors(errors: list) -> str:
    """'path/to/field: what is wrong; ...' for jsonschema errors, in a stable order."""
    parts = []
    for err in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        parts.append(f"{where}: {err.message}")
    return "; ".join(parts)


def check(location: str, value: Any, what: str) -> None:
    """Raise ContractError naming every offending field when `value` does not match the schema at `location`
    (a file under shared_contract/, optionally with a JSON pointer to a part of it: see schema_at)."""
    predicate = _predicate(location)
    if predicate is not None and predicate(value):
        return
    errors = list(_validator(location).iter_errors(value))
    if errors:
        raise ContractError(f"invalid {what}: {describe_errors(errors)}")


def validate_host_message(message: Any) -> dict[str, Any]:
    """Return the message if it is a valid host-protocol message, else raise ContractError. A mapping that
    is not a dict (e.g. a parsed hello) is checked, and returned, as a plain dict."""
    if isinstance(message, Mapping) and not isinstance(message, dict):
        message = dict(message)
    if not isinstance(message, dict):
        raise ContractError("invalid host message: expected a JSON object")
    kind = message.get("type")
    if kind not in HOST_MESSAGE_TYPES:
        raise ContractError(f"invalid host message: type: unknown message type {kind!r}")
    check(f"host/{kind}.json", message, f"{kind} message")
    return message


def validate_tool_input(name: str, arguments: Any) -> dict[str, Any]:
    predicates = _tool_predicates()  # a valid input never builds (nor imports) jsonschema's validator
    if name not in predicates:
        raise ContractError(f"unknown tool {name!r}; available: {', '.join(sorted(predicates))}")
    if not isinstance(arguments, dict):
        raise ContractError(f"invalid input for {name}: expected a JSON object")
    predicate = predicates[name]
    errors = [] if predicate is not None and predicate(arguments) else list(_tool_validator(name).iter_errors(arguments))
    if errors:
        raise ContractError(f"invalid input for {name}: {describe_errors(errors)}")
    if name == "execute_task_automation" and ("code" in arguments) == ("edits" in arguments):
        # Kept out of the schema itself: vendors reject oneOf at the top of a tool's parameters.
        raise ContractError(f"invalid input for {name}: give exactly one of `code` (a full script) or `edits`")
    return arguments


def validate_chunk(chunk: dict[str, Any]) -> dict[str, Any]:
    check("stream_chunk.json", chunk, "stream chunk")
    return chunk
