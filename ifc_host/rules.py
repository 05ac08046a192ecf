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
"""
from __future__ import annotations

import functools
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import ifcopenshell

from ifc_host.findings import SEVERITIES, ElementRef, Finding

KINDS = ("schema", "model rule", "ids", "clash", "clearance", "script")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}")
MAX_CHECKS = 50
MAX_DOCUMENT_BYTES = 2_000_000
FINDING_PREFIX = "FINDING "
MAX_SCRIPT_FINDINGS = 500


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
    from ifc_host.ids_check import IdsProblem, parse_ids

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


# --- whole models ----------------------------------------------------------------------------------------------

def run_rule_set(rules: RuleSet, work: str | Path, refs: Sequence[str | Path] = (),
                 models: dict[str, ifcopenshell.file] | None = None,
                 run_script: Callable[[ifcopenshell.file, Check, str], list[Finding]] | None = None) -> list[Finding]:
    """Every finding of every check on the working model (clashes: against `refs`, or within it). Script checks
    run through `run_script`: `check_scripts.sandboxed_check_scripts` anywhere but in a sandboxed script process,
    where it is `script_findings`; without one a rule set with a script check is refused."""
    from ifc_host.clash import DEFAULT_TOLERANCE, clash_findings

    models = dict(models or {})
    model = models.get(str(work)) or ifcopenshell.open(str(work))
    models[str(work)] = model
    name = Path(work).name
    findings: list[Finding] = []
    for check in rules.checks:
        if check.kind == "schema":
            found = schema_findings(model, name)
        elif check.kind == "model rule":
            found = filling_findings(model, name)
        elif check.kind == "ids":
            found = ids_findings(model, check.ids_xml or "", name)
        elif check.kind == "clash":
            found = clash_findings(work, refs, models=models,
                                   tolerance=DEFAULT_TOLERANCE if check.tolerance is None else check.tolerance)
        elif check.kind == "clearance":
            found = clash_findings(work, refs, models=models, clearance=check.distance)
        else:
            if run_script is None:
                raise RuleSetProblem(f"the script check {check.rule!r} runs only in a script's sandbox")
            found = run_script(model, check, name)
        findings += with_check(found, check)
    return findings


def with_check(findings: Iterable[Finding], check: Check) -> list[Finding]:
    """The findings with the check's severity, and its name as their rule when it has one."""
    return [replace(f, severity=check.severity, rule=check.name or f.rule) for f in findings]


def schema_findings(model: ifcopenshell.file, model_name: str) -> list[Finding]:
    """IfcOpenShell's schema validation of the whole model (attribute types, cardinalities, GlobalIds)."""
    import ifcopenshell.validate

    logger = ifcopenshell.validate.json_logger()
    ifcopenshell.validate.validate(model, logger)
    out: list[Finding] = []
    for statement in logger.statements:
        instance = statement.get("instance")
        elements: tuple[ElementRef, ...] = ()
        label = "model"
        if isinstance(instance, ifcopenshell.entity_instance) and instance.id():
            elements = (ElementRef.of(instance, model_name),)
            label = f"#{instance.id()}={instance.is_a()}"
        attribute = statement.get("attribute")
        where = f".{attribute}" if attribute else ""
        message = str(statement.get("message") or "").strip().splitlines()[0][:300]
        out.append(Finding("schema", "error", f"{label}{where}: {message[:120]}", message, elements))
    return out


def filling_findings(model: ifcopenshell.file, model_name: str) -> list[Finding]:
    """The model rule of ifc_host/validation.py over the whole model: a door or window fills an opening."""
    from ifc_host.validation import FILLING_CLASSES

    out: list[Finding] = []
    for cls in FILLING_CLASSES:
        for element in model.by_type(cls):
            if element.is_a("IfcTypeObject") or getattr(element, "FillsVoids", None):
                continue
            ref = ElementRef.of(element, model_name)
            out.append(Finding("model rule", "error", f"{ref.label()} fills no opening",
                               f"the {cls[3:].lower()} fills no IfcOpeningElement, so it cuts no hole in any wall",
                               (ref,)))
    return out


def ids_findings(model: ifcopenshell.file, ids_xml: str, model_name: str, ids_name: str = "the IDS") -> list[Finding]:
    """Every failure of the IDS on the whole model, as findings (see `nexus check --ids`)."""
    from ifc_host.ids_check import check_model, parsed_ids

    state = check_model(model, parsed_ids(ids_xml))
    findings: list[Finding] = []
    for (s, _r, element_id), (_cls, requirement, reason) in sorted(state.failures.items()):
        element = ElementRef.of(model.by_id(element_id), model_name)
        findings.append(Finding(f"IDS '{state.names[s]}'", "error", f"{element.label()}: {requirement}",
                                f"{ids_name}, specification '{state.names[s]}': {requirement}: {reason}",
                                (element,)))
    for s, why in sorted(state.spec_failures.items()):
        if why == "prohibited":
            for element_id in sorted(state.applicable[s]):
                element = ElementRef.of(model.by_id(element_id), model_name)
                findings.append(Finding(f"IDS '{state.names[s]}'", "error",
                                        f"{element.label()} is prohibited by '{state.names[s]}'",
                                        f"{ids_name}: the specification '{state.names[s]}' prohibits this element",
                                        (element,)))
        else:
            findings.append(Finding(f"IDS '{state.names[s]}'", "error",
                                    f"'{state.names[s]}' applies to no element",
                                    f"{ids_name}: the specification '{state.names[s]}' is required but no element "
                                    f"of {model_name} is of the kind it applies to"))
    for s, versions in sorted(state.other_version.items()):
        findings.append(Finding(f"IDS '{state.names[s]}'", "info", f"'{state.names[s]}' was not checked",
                                f"{ids_name}: the specification is for {versions}, the model is "
                                f"{model.schema_identifier}"))
    return findings


def require_code(check: Check) -> str:
    """A script check's code; RuleSetProblem when it only names a skill this side cannot resolve."""
    if check.code is None:
        raise RuleSetProblem(f"the script check {check.rule!r} names the skill {check.skill!r}, which is only "
                             "known on the server (save the rule set there, or give its \"code\")")
    return check.code


def script_findings(model: ifcopenshell.file, check: Check, model_name: str) -> list[Finding]:
    """Run a check script here (read-only: whatever it changes is rolled back) and read its FINDING lines. Only
    inside a sandboxed script process (a host's collection); anywhere else, ifc_host/check_scripts.py."""
    code = require_code(check)
    output = io.StringIO()
    model.begin_transaction()  # rolled back after the check (on a host: a nested transaction of the host's)
    error = None
    try:  # its print() writes to `output`; sys.stdout is never swapped (another thread may be printing)
        exec(compile(code, f"<{check.rule}>", "exec"),  # noqa: S102 - the team's own check script, sandboxed
             {"__name__": "__main__", "model": model, "ifcopenshell": ifcopenshell,
              "print": functools.partial(print, file=output)})
    except Exception as exc:  # noqa: BLE001 - a failing check is a finding, not a crash of the run
        error = f"{type(exc).__name__}: {exc}"
    finally:
        model.discard_transaction()
    found = parse_finding_lines(output.getvalue(), model, model_name, check.rule)
    if error is not None:
        found.append(Finding(check.rule, "error", f"the check script {check.rule!r} failed",
                             f"{error}; the findings it printed before are listed"))
    return found


def parse_finding_lines(stdout: str, model: ifcopenshell.file | None, model_name: str, rule: str) -> list[Finding]:
    """The findings a check skill printed: lines `FINDING {"title", "elements": [GlobalId...], "description",
    "severity"}` (severity error unless given; a rule set's check gives its own to every finding).
    A line that is not valid JSON of that shape is itself reported (info), so a broken check is seen."""
    out: list[Finding] = []
    for number, line in enumerate(stdout.splitlines(), 1):
        if not line.startswith(FINDING_PREFIX):
            continue
        if len(out) >= MAX_SCRIPT_FINDINGS:
            out.append(Finding(rule, "info", f"more than {MAX_SCRIPT_FINDINGS} findings: the rest are not listed"))
            break
        try:
            data = json.loads(line[len(FINDING_PREFIX):])
            title = data["title"]
            guids = data.get("elements") or []
            severity = data.get("severity", "error")
            if not isinstance(title, str) or not isinstance(guids, list):
                raise ValueError("title must be text and elements a list of GlobalIds")
            if severity not in SEVERITIES:
                raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}")
        except (ValueError, KeyError, TypeError) as exc:
            out.append(Finding(rule, "info", f"unreadable FINDING line {number}",
                               f"{exc}: {line[:200]}"))
            continue
        out.append(Finding(rule, severity, title[:255], str(data.get("description") or ""),
                           tuple(_element(model, str(g), model_name) for g in guids[:100])))
    return out


def _element(model: ifcopenshell.file | None, global_id: str, model_name: str) -> ElementRef:
    if model is not None:
        try:
            return ElementRef.of(model.by_guid(global_id), model_name)
        except RuntimeError:
            pass
    return ElementRef(global_id, "", None, model_name)


def count_by_severity(findings: Iterable[Finding]) -> dict[str, int]:
    counts = dict.fromkeys(SEVERITIES, 0)
    for finding in findings:
        counts[finding.severity] += 1
    return counts
