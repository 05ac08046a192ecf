"""Rule sets: a named list of checks, each with a severity (error, warning, info), run over whole models
(`nexus check --rules`, `nexus batch --rules`) or after every automation on what the script introduced.

A rule set is a JSON document:

    {"name": "coordination", "checks": [
      {"check": "schema", "severity": "error"},
      {"check": "model rule", "severity": "warning"},
      {"check": "ids", "ids": "doors.ids", "severity": "error"},
      {"check": "clash", "severity": "error", "tolerance": 0.002},
      {"check": "clearance", "distance": 0.05, "severity": "warning"},
      {"check": "script", "name": "Doors need a mark", "code": "...", "severity": "warning"}]}

`ids` names an IDS file (relative to the rule set's file) or holds the XML itself (`ids_xml`); a saved rule set
always holds the XML. A `script` check (a check skill) is Python run read-only against `model` that prints its
findings, one line each, in the documented format `FINDING {"title": ..., "elements": [GlobalId, ...],
"description": ...}` (every other line is ignored); the check's severity applies to each.

Every finding a check reports carries that check's severity and its name as its rule (`name`, else the check's
kind: "schema", "model rule", "IDS '<specification>'", "clash", "clearance", the script's name).

This module reads and checks the document and needs no IfcOpenShell (the orchestrator reads, saves and lists rule
sets without loading it); ifc_host/rules.py runs one over a model.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ifc_host.findings import SEVERITIES, Finding

KINDS = ("schema", "model rule", "ids", "clash", "clearance", "script")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}")
MAX_CHECKS = 50
MAX_DOCUMENT_BYTES = 2_000_000


class RuleSetProblem(ValueError):
    """A rule set that cannot be used as written; the message names the check and what is wrong."""


@dataclass(frozen=True)
class Check:
    kind: str
    severity: str
    name: str | None = None
    ids_xml: str | None = None
    tolerance: float | None = None
    distance: float | None = None
    code: str | None = None
    skill: str | None = None

    @property
    def rule(self) -> str:
        return self.name or self.kind

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"check": self.kind, "severity": self.severity}
        for key in ("name", "ids_xml", "tolerance", "distance", "code", "skill"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@dataclass(frozen=True)
class RuleSet:
    name: str
    checks: tuple[Check, ...] = field(default_factory=tuple)

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "checks": [c.as_json() for c in self.checks]}

    def needs_clash(self) -> bool:
        return any(c.kind in ("clash", "clearance") for c in self.checks)


def parse_rule_set(data: Any, base: Path | None = None) -> RuleSet:
    """The rule set in `data` (a parsed JSON document), or RuleSetProblem. `base`: where `ids` file names are
    looked up (a rule set file's folder); without it only `ids_xml` is accepted."""
    if not isinstance(data, dict):
        raise RuleSetProblem("a rule set is a JSON object {\"name\": ..., \"checks\": [...]}")
    unknown = set(data) - {"name", "checks", "description"}
    if unknown:
        raise RuleSetProblem(f"unknown key(s) in the rule set: {', '.join(sorted(unknown))}")
    name = data.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise RuleSetProblem("name: 1-64 letters, digits, spaces, . _ or - (starting with a letter or digit)")
    checks = data.get("checks")
    if not isinstance(checks, list) or not checks:
        raise RuleSetProblem("checks: a non-empty list of checks")
    if len(checks) > MAX_CHECKS:
        raise RuleSetProblem(f"checks: at most {MAX_CHECKS}, got {len(checks)}")
    return RuleSet(name, tuple(_check(c, i + 1, base) for i, c in enumerate(checks)))


def _check(data: Any, number: int, base: Path | None) -> Check:
    where = f"check {number}"
    if not isinstance(data, dict):
        raise RuleSetProblem(f"{where}: expected an object with \"check\" and \"severity\"")
    kind = data.get("check")
    if kind not in KINDS:
        raise RuleSetProblem(f"{where}: \"check\" must be one of {', '.join(KINDS)}, got {kind!r}")
    where = f"check {number} ({kind})"
    allowed = {"check", "severity", "name", *{"ids": ("ids", "ids_xml"), "clash": ("tolerance",),
                                              "clearance": ("distance",), "script": ("code", "skill")}.get(kind, ())}
    unknown = set(data) - allowed
    if unknown:
        raise RuleSetProblem(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    severity = data.get("severity")
    if severity not in SEVERITIES:
        raise RuleSetProblem(f"{where}: \"severity\" must be one of {', '.join(SEVERITIES)}, got {severity!r}")
    name = data.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > 120):
        raise RuleSetProblem(f"{where}: \"name\" must be a short text")
    check = Check(kind, severity, name)
    if kind == "ids":
        return replace(check, ids_xml=_ids_text(data, where, base))
    if kind == "clash":
        return replace(check, tolerance=_metres(data.get("tolerance"), where, "tolerance", positive=False))
    if kind == "clearance":
        distance = _metres(data.get("distance"), where, "distance", positive=True)
        if distance is None:
            raise RuleSetProblem(f"{where}: \"distance\" (metres) is required")
        return replace(check, distance=distance)
    if kind == "script":
        code, skill = data.get("code"), data.get("skill")
        if code is None and skill is None:
            raise RuleSetProblem(f"{where}: give \"code\" (Python printing FINDING lines) or \"skill\" (a check "
                                 "skill of your team, on the server)")
        if code is not None and (not isinstance(code, str) or not code.strip()):
            raise RuleSetProblem(f"{where}: \"code\" must be Python source")
        if skill is not None and (not isinstance(skill, str) or not skill.strip()):
            raise RuleSetProblem(f"{where}: \"skill\" must be a skill's name")
        if code is not None:
            try:
                compile(code, f"<{check.rule}>", "exec")
            except SyntaxError as exc:
                raise RuleSetProblem(f"{where}: the code does not compile: {exc.msg} (line {exc.lineno})") from None
        return replace(check, code=code, skill=skill)
    return check


def _ids_text(data: dict[str, Any], where: str, base: Path | None) -> str:
    from ifc_host.ids_reader import IdsProblem, parse_ids

    text = data.get("ids_xml")
    if text is None:
        name = data.get("ids")
        if not isinstance(name, str) or not name:
            raise RuleSetProblem(f"{where}: give \"ids\" (an IDS file) or \"ids_xml\" (the IDS document)")
        if base is None:
            raise RuleSetProblem(f"{where}: a saved rule set holds the IDS itself: give \"ids_xml\", not a file")
        path = (base / name) if not Path(name).is_absolute() else Path(name)
        if not path.is_file():
            raise RuleSetProblem(f"{where}: no IDS file at {path}")
        text = path.read_text(encoding="utf-8", errors="replace")
    if not isinstance(text, str):
        raise RuleSetProblem(f"{where}: \"ids_xml\" must be the IDS document as text")
    try:
        parse_ids(text)
    except IdsProblem as exc:
        raise RuleSetProblem(f"{where}: {exc}") from None
    return text


def _metres(value: Any, where: str, key: str, positive: bool) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0 \
            or (positive and value == 0):
        raise RuleSetProblem(f"{where}: \"{key}\" must be {'more than' if positive else 'at least'} 0 metres, "
                             f"got {value!r}")
    return float(value)


def read_rule_set_file(path: str | Path) -> RuleSet:
    path = Path(path)
    if not path.is_file():
        raise RuleSetProblem(f"no rule set file at {path}")
    if path.stat().st_size > MAX_DOCUMENT_BYTES:
        raise RuleSetProblem(f"{path}: a rule set is at most {MAX_DOCUMENT_BYTES} bytes")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RuleSetProblem(f"{path} is not JSON: {exc}") from None
    try:
        return parse_rule_set(data, path.parent)
    except RuleSetProblem as exc:
        raise RuleSetProblem(f"{path}: {exc}") from None


def with_check(findings: Iterable[Finding], check: Check) -> list[Finding]:
    """The findings with the check's severity, and its name as their rule when it has one."""
    return [replace(f, severity=check.severity, rule=check.name or f.rule) for f in findings]


def require_code(check: Check) -> str:
    """A script check's code; RuleSetProblem when it only names a skill this side cannot resolve."""
    if check.code is None:
        raise RuleSetProblem(f"the script check {check.rule!r} names the skill {check.skill!r}, which is only "
                             "known on the server (save the rule set there, or give its \"code\")")
    return check.code


def count_by_severity(findings: Iterable[Finding]) -> dict[str, int]:
    counts = dict.fromkeys(SEVERITIES, 0)
    for finding in findings:
        counts[finding.severity] += 1
    return counts
