"""A skill's parameters: proposed from the top-level literal assignments of its script (`STOREY = "Level 1"`,
`PREFIX = 'A-'`, `OFFSET = 250`), confirmed by a person, and bound by rewriting exactly those lines.

Line-based rather than `ast`-based so that it reads IronPython 2.7 scripts (print statements and all) as well
as Python 3 ones; each value is still checked with `ast.literal_eval` (through cloud.pyparse: it parses).
"""
from __future__ import annotations

import re
from typing import Any

from cloud import pyparse

ASSIGNMENT = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*(?P<value>[^#\n]+?)[ \t]*(?P<comment>#.*)?$")
MAX_TEXT = 1000


class BindError(ValueError):
    pass


def _literal(text: str) -> Any:
    try:
        value = pyparse.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, (str, int, float, bool)) else None


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def _assignments(code: str) -> dict[str, tuple[int, Any]]:
    """name -> (line index, literal value) of the first top-level literal assignment of each name."""
    found: dict[str, tuple[int, Any]] = {}
    for index, line in enumerate(code.split("\n")):
        match = ASSIGNMENT.match(line)
        if match is None or match["name"] in found:
            continue
        value = _literal(match["value"])
        if value is not None:
            found[match["name"]] = (index, value)
    return found


def propose_parameters(code: str) -> list[dict[str, Any]]:
    """Every top-level literal assignment, as a candidate parameter {name, type, default}."""
    return [{"name": name, "type": _kind(value), "default": value}
            for name, (_, value) in _assignments(code).items()]


def confirm_parameters(code: str, chosen: list[Any]) -> list[dict[str, Any]]:
    """The parameters a person chose (names, or {name, description}) among those the script offers."""
    offered = {p["name"]: p for p in propose_parameters(code)}
    out = []
    for item in chosen:
        name = item.get("name") if isinstance(item, dict) else item
        if not isinstance(name, str) or name not in offered:
            raise BindError(f"parameters: {name!r} is not a top-level literal assignment of the script "
                            f"(candidates: {', '.join(offered) or 'none'})")
        description = item.get("description", "") if isinstance(item, dict) else ""
        if not isinstance(description, str) or len(description) > MAX_TEXT:
            raise BindError(f"parameters: {name}: description must be text of at most {MAX_TEXT} characters")
        out.append({**offered[name], "description": description})
    return out


def coerce(parameter: dict[str, Any], value: Any) -> Any:
    """`value` as the parameter's type; text (from a command line or a form) is converted."""
    kind, name = parameter["type"], parameter["name"]
    if isinstance(value, str) and kind != "string":
        text = value.strip()
        if kind == "boolean" and text.lower() in ("true", "false", "1", "0", "yes", "no"):
            return text.lower() in ("true", "1", "yes")
        try:
            return int(text) if kind == "integer" else float(text) if kind == "number" else value
        except ValueError:
            raise BindError(f"{name}: expected {kind}, got {value!r}") from None
    ok = {"string": isinstance(value, str),
          "boolean": isinstance(value, bool),
          "integer": isinstance(value, int) and not isinstance(value, bool),
          "number": isinstance(value, (int, float)) and not isinstance(value, bool)}[kind]
    if not ok:
        raise BindError(f"{name}: expected {kind}, got {value!r}")
    if isinstance(value, str) and ("\n" in value or len(value) > MAX_TEXT):
        raise BindError(f"{name}: one line of at most {MAX_TEXT} characters")
    return value


def bind(code: str, parameters: list[dict[str, Any]], args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The script with each parameter's line set to its argument (or its default); also the values used."""
    by_name = {p["name"]: p for p in parameters}
    unknown = sorted(set(args) - set(by_name))
    if unknown:
        raise BindError(f"unknown argument(s) {', '.join(unknown)}")
    values = {name: coerce(p, args[name]) if name in args else p["default"] for name, p in by_name.items()}
    lines = code.split("\n")
    where = _assignments(code)
    for name, value in values.items():
        if name not in where:
            raise BindError(f"{name}: the script no longer assigns it at top level")
        index = where[name][0]
        match = ASSIGNMENT.match(lines[index])
        assert match is not None
        comment = f"  {match['comment']}" if match["comment"] else ""
        lines[index] = f"{name} = {value!r}{comment}"
    return "\n".join(lines), values
