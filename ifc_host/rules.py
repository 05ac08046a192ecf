"""Running a rule set (ifc_host/rule_set.py: the document, its checks and their severities) over a whole model
(`nexus check --rules`, `nexus batch --rules`): every check's findings, each with its check's severity and name.

A `script` check (a check skill) is Python run read-only against `model` that prints its findings, one line each,
in the documented format `FINDING {"title": ..., "elements": [GlobalId, ...], "description": ...}` (every other
line is ignored); the check's severity applies to each.
"""
from __future__ import annotations

import functools
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import ifcopenshell

from ifc_host.findings import SEVERITIES, ElementRef, Finding
from ifc_host.rule_set import Check, RuleSet, RuleSetProblem, require_code, with_check

FINDING_PREFIX = "FINDING "
MAX_SCRIPT_FINDINGS = 500


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
    from ifc_host.ids_check import check_model
    from ifc_host.ids_reader import parsed_ids

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
