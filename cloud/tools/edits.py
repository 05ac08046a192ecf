"""Anchored edits on the script the server holds: replace exact old text, leniently, and advise, never block."""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from cloud import pyparse

NEAREST_CONTEXT = 2


@dataclass
class EditOutcome:
    script: str | None  # None when an edit missed: nothing runs
    applied: list[int] = field(default_factory=list)  # indexes of edits applied
    problem: str | None = None
    notes: list[str] = field(default_factory=list)  # advisory validator findings


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _exact_occurrences(script: str, old: str) -> list[int]:
    found, start = [], script.find(old)
    while start != -1:
        found.append(start)
        start = script.find(old, start + 1)
    return found


def _lenient_occurrences(lines: list[str], old_lines: list[str]) -> list[int]:
    """Line indexes where old's lines match ignoring surrounding whitespace."""
    want = [s.strip() for s in old_lines]
    while want and not want[-1]:
        want.pop()
    if not want:
        return []
    stripped = [s.strip() for s in lines]
    return [i for i in range(len(lines) - len(want) + 1) if stripped[i:i + len(want)] == want]


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _reindent(new: str, old_lines: list[str], script_lines: list[str]) -> str:
    """Give the new text the script's indentation where the model's old text had other indentation.

    When each of the model's indentation levels pairs with one level of the script, levels are mapped
    (a deeper line keeps its extra depth on top of the nearest mapped level, so 2-space code merged into
    4-space code stays valid). When they do not (the model flattened a nested block), new line k takes
    the indentation of matched line k.
    """
    mapping: dict[str, str] = {}
    consistent = True
    for old, actual in zip(old_lines, script_lines, strict=False):
        if old.strip():
            consistent &= mapping.setdefault(_indent(old), _indent(actual)) == _indent(actual)
    if consistent and all(k == v for k, v in mapping.items()):
        return new
    out = []
    for k, line in enumerate(new.split("\n")):
        if line.strip():
            if not consistent:
                line = _indent(script_lines[min(k, len(script_lines) - 1)]) + line.lstrip()
            else:
                indent = _indent(line)
                known = max((m for m in mapping if indent.startswith(m)), key=len, default=None)
                if known is not None:
                    line = mapping[known] + line[len(known):]
        out.append(line)
    return "\n".join(out)


def _nearest_lines(script: str, old: str) -> str:
    lines = script.split("\n")
    first = next((s for s in old.split("\n") if s.strip()), old).strip()
    scored = sorted(((difflib.SequenceMatcher(None, first, s.strip()).ratio(), i) for i, s in enumerate(lines)),
                    reverse=True)
    if not scored or scored[0][0] < 0.3:
        return "no similar lines found"
    i = scored[0][1]
    lo, hi = max(0, i - NEAREST_CONTEXT), min(len(lines), i + NEAREST_CONTEXT + 1)
    return "\n".join(f"{n + 1:>4}| {lines[n]}" for n in range(lo, hi))


def _choose(candidates: list[int], line_of: Any, line: int | None) -> tuple[int | None, str | None]:
    if len(candidates) == 1:
        return candidates[0], None
    starts = [line_of(c) for c in candidates]
    if line is None:
        return None, (f"the old text occurs {len(candidates)} times (lines {', '.join(map(str, starts))}); "
                      "add `line` to choose one")
    best = min(range(len(candidates)), key=lambda k: abs(starts[k] - line))
    return candidates[best], None


def _apply_one(script: str, old: str, new: str, line: int | None) -> tuple[str | None, str | None]:
    """Return (merged script, None) or (None, what went wrong)."""
    exact = _exact_occurrences(script, old)
    if exact:
        at, problem = _choose(exact, lambda off: _line_of(script, off), line)
        if at is None:
            return None, problem
        return script[:at] + new + script[at + len(old):], None
    lines = script.split("\n")
    old_lines = old.strip("\n").split("\n")
    loose = _lenient_occurrences(lines, old_lines)
    if not loose:
        return None, "the old text was not found. Nearest lines in the current script:\n" + _nearest_lines(script, old)
    at, problem = _choose(loose, lambda i: i + 1, line)
    if at is None:
        return None, problem
    width = len(old_lines)
    new_text = _reindent(new.strip("\n"), old_lines, lines[at:at + width])
    merged = lines[:at] + new_text.split("\n") + lines[at + width:]
    return "\n".join(merged), None


def _advise(before: str, after: str, edits: list[dict[str, Any]], check_syntax: bool) -> list[str]:
    notes = []
    after_lines = after.split("\n")
    for i in range(1, len(after_lines)):
        line = after_lines[i]
        if line.strip() and len(line.strip()) > 3 and line == after_lines[i - 1] and line not in before:
            notes.append(f"line {i + 1} duplicates the line before it")
    for n, edit in enumerate(edits):
        old_first = next((s for s in edit["old"].split("\n") if s.strip()), "")
        new_first = next((s for s in edit["new"].split("\n") if s.strip()), "")
        if old_first and new_first and _indent(old_first) != _indent(new_first):
            notes.append(f"edit {n + 1} changes the indentation of its first line")
    if len(after) < len(before) / 2:
        notes.append(f"the script shrank by more than half ({len(before):,} -> {len(after):,} characters)")
    if check_syntax:
        try:
            pyparse.parse(after)  # one thread at a time: CPython gh-106905 (cloud/pyparse.py)
        except SyntaxError as exc:
            notes.append(f"the merged script does not parse: {exc.msg} (line {exc.lineno})")
    return notes


def apply_edits(script: str, edits: list[dict[str, Any]], check_syntax: bool = True) -> EditOutcome:
    current = script
    outcome = EditOutcome(script=None)
    for n, edit in enumerate(edits):
        merged, problem = _apply_one(current, edit["old"], edit["new"], edit.get("line"))
        if merged is None:
            done = ", ".join(str(i + 1) for i in outcome.applied) or "none"
            outcome.problem = (f"edit {n + 1} of {len(edits)} could not be applied: {problem}\n"
                               f"Edits applied before it: {done}. Nothing was run; the script is unchanged.")
            return outcome
        current = merged
        outcome.applied.append(n)
    outcome.script = current
    outcome.notes = _advise(script, current, edits, check_syntax)
    return outcome


WHOLE_SCRIPT_LINES = 60  # a merged script this short is shown whole
EXCERPT_CONTEXT = 3  # unchanged lines shown around each changed region


def merged_excerpt(before: str, after: str) -> tuple[str, bool]:
    """The merged script as it will run, numbered: whole when short, else each changed region with a few
    lines around it ('...' between regions). Returns (text, whole)."""
    lines = after.split("\n")
    numbered = [f"{n + 1:>4}| {line}" for n, line in enumerate(lines)]
    if len(lines) <= WHOLE_SCRIPT_LINES:
        return "\n".join(numbered), True
    matcher = difflib.SequenceMatcher(None, before.split("\n"), lines, autojunk=False)
    windows: list[list[int]] = []
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        lo, hi = max(0, j1 - EXCERPT_CONTEXT), min(len(lines), max(j2, j1 + 1) + EXCERPT_CONTEXT)
        if windows and lo <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], hi)
        else:
            windows.append([lo, hi])
    parts = []
    for lo, hi in windows:
        parts.append(("   ...\n" if lo > 0 else "") + "\n".join(numbered[lo:hi]))
    return "\n".join(parts) + ("\n   ..." if windows and windows[-1][1] < len(lines) else ""), False
