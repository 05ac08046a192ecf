"""A skill's parameters: proposed from the top-level literal assignment statements of its script
(`STOREY = "Level 1"`, `PREFIX = 'A-'`, `OFFSET = 250`), confirmed by a person, and bound by rewriting
exactly those values.

Statements are found in the script's token stream (Python's own tokenizer), which reads IronPython 2.7
scripts (print statements and all) as well as Python 3 ones: a parameter is a logical line at indentation
zero made of `NAME = literal` and nothing else, so a line inside a string (one STRING token), a function or
an `if` (indented), or after a `;` is never one. A bound value is written as a Python literal that
`ast.literal_eval` reads back identically, or refused; the bound script must then tokenize the same apart
from those values, and, for a script that parses as Python 3, its syntax tree must differ from the
original's in exactly those constants.
"""
from __future__ import annotations

import ast
import io
import keyword
import tokenize
from dataclasses import dataclass
from typing import Any

from cloud import pyparse

MAX_TEXT = 1000
SKIPPED = {tokenize.NL, tokenize.COMMENT, tokenize.ENCODING}
LITERAL_TYPES = (str, int, float, bool)


class BindError(ValueError):
    pass


@dataclass(frozen=True)
class Assignment:
    name: str
    value: Any
    start: int  # offsets of the value's source text in the script
    end: int


def _literal(text: str) -> Any:
    try:
        value = pyparse.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, LITERAL_TYPES) else None


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def _tokens(code: str) -> list[tokenize.TokenInfo]:
    try:
        return list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError) as exc:
        raise BindError(f"the script cannot be read as Python: {exc}") from None


def _offsets(code: str) -> list[int]:
    """The offset in `code` of the start of each line (1-based line numbers, as tokenize counts)."""
    starts, total = [0, 0], 0
    for line in code.split("\n"):  # as io.StringIO.readline splits, for the tokenizer
        total += len(line) + 1
        starts.append(total)
    return starts


def _logical_lines(tokens: list[tokenize.TokenInfo]) -> list[tuple[int, list[tokenize.TokenInfo]]]:
    """(indentation depth, tokens) of each logical line, without comments and blank-line tokens."""
    lines: list[tuple[int, list[tokenize.TokenInfo]]] = []
    depth, current = 0, []
    for token in tokens:
        if token.type == tokenize.INDENT:
            depth += 1
        elif token.type == tokenize.DEDENT:
            depth -= 1
        elif token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            if current:
                lines.append((depth, current))
            current = []
        elif token.type not in SKIPPED:
            current.append(token)
    return lines


def _assignments(code: str) -> list[tuple[str, Assignment | None]]:
    """Every top-level `NAME = ...` statement, in order: (name, the assignment if its value is a literal)."""
    offsets = _offsets(code)
    found: list[tuple[str, Assignment | None]] = []
    for depth, line in _logical_lines(_tokens(code)):
        if depth or len(line) < 3 or line[0].type != tokenize.NAME or keyword.iskeyword(line[0].string) \
                or line[1].type != tokenize.OP or line[1].string != "=":
            continue
        name, value_tokens = line[0].string, line[2:]
        if any(t.type == tokenize.ERRORTOKEN or t.string in (";", "=") for t in value_tokens):
            found.append((name, None))
            continue
        start = offsets[value_tokens[0].start[0]] + value_tokens[0].start[1]
        end = offsets[value_tokens[-1].end[0]] + value_tokens[-1].end[1]
        value = _literal(code[start:end])
        found.append((name, None if value is None else Assignment(name, value, start, end)))
    return found


def _parameters_of(code: str) -> dict[str, Assignment]:
    """name -> its assignment, for names assigned exactly once at top level, by a literal (a second
    assignment would override a bound value unseen)."""
    found = _assignments(code)
    names = [name for name, _ in found]
    return {name: a for name, a in found if a is not None and names.count(name) == 1}


def propose_parameters(code: str) -> list[dict[str, Any]]:
    """Every top-level literal assignment, as a candidate parameter {name, type, default}; none for a script
    Python's tokenizer cannot read."""
    try:
        found = _parameters_of(code)
    except BindError:
        return []
    return [{"name": a.name, "type": _kind(a.value), "default": a.value} for a in found.values()]


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


def value_spans(code: str, names: list[str]) -> dict[str, list[int]]:
    """For a binder outside this process (the pyRevit button, IronPython 2.7): where each parameter's value
    is in `code`, as [start, end) offsets in UTF-16 code units (IronPython's string indexes); a name that
    is no longer a parameter is left out."""
    found = _parameters_of(code)

    def units(offset: int) -> int:
        return len(code[:offset].encode("utf-16-le")) // 2

    return {name: [units(found[name].start), units(found[name].end)] for name in names if name in found}


def _written(name: str, value: Any) -> str:
    """`value` as Python source that `ast.literal_eval` reads back as the same value of the same type."""
    text = repr(value)
    back = _literal(text)
    if back is None or type(back) is not type(value) or back != value:
        raise BindError(f"{name}: {value!r} cannot be written as a Python literal that reads back the same")
    return text


def _skeleton(code: str, spans: list[tuple[int, int]]) -> list[tuple[int, str]]:
    """The script's tokens with each value span in `spans` as one placeholder."""
    offsets = _offsets(code)
    out: list[tuple[int, str]] = []
    for token in _tokens(code):
        at = offsets[token.start[0]] + token.start[1]
        inside = next((span for span in spans if span[0] <= at < span[1]), None)
        if inside is None:
            out.append((token.type, token.string))
        elif at == inside[0]:
            out.append((-1, "value"))
    return out


def _tree_without(code: str, names: set[str]) -> str | None:
    """The Python 3 syntax tree of `code` with the values of the top-level assignments of `names` blanked;
    None if it does not parse as Python 3 (an IronPython 2.7 script)."""
    try:
        tree = pyparse.parse(code)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in names:
            node.value = ast.Constant(value=None)
    return ast.dump(tree)


def bind(code: str, parameters: list[dict[str, Any]], args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The script with each parameter's value set to its argument (or its default); also the values used."""
    by_name = {p["name"]: p for p in parameters}
    unknown = sorted(set(args) - set(by_name))
    if unknown:
        raise BindError(f"unknown argument(s) {', '.join(unknown)}: not a parameter of this skill "
                        f"(its parameters: {', '.join(by_name) or 'none'})")
    values = {name: coerce(p, args[name]) if name in args else p["default"] for name, p in by_name.items()}
    where = _parameters_of(code)
    for name in values:
        if name not in where:
            raise BindError(f"{name}: the script does not assign it exactly once at top level as a literal")
    bound, last = [], 0
    for assignment in sorted((where[name] for name in values), key=lambda a: a.start):
        bound += [code[last:assignment.start], _written(assignment.name, values[assignment.name])]
        last = assignment.end
    result = "".join(bound) + code[last:]
    _check_bound(code, result, values, where)
    return result, values


def _check_bound(code: str, result: str, values: dict[str, Any], where: dict[str, Assignment]) -> None:
    """Refuse unless `result` is `code` with exactly the values of `values` changed."""
    again = _parameters_of(result)
    for name, value in values.items():
        found = again.get(name)
        if found is None or type(found.value) is not type(value) or found.value != value:
            raise BindError(f"{name}: binding {value!r} would change the script beyond its value")
    before = _skeleton(code, [(a.start, a.end) for a in (where[n] for n in values)])
    after = _skeleton(result, [(a.start, a.end) for a in (again[n] for n in values)])
    if before != after:
        raise BindError(f"binding {', '.join(values)} would change the script beyond its values")
    tree = _tree_without(code, set(values))
    if tree is not None and _tree_without(result, set(values)) != tree:
        raise BindError(f"binding {', '.join(values)} would change the script's syntax tree beyond its values")
