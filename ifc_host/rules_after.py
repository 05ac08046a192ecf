"""A rule set after an automation: the findings the script introduced, each with its check's severity.

Run in the keeper (trusted_report.py) on the committed model before the run and the model the commit would write,
like validation. Schema and model-rule checks are validation's own (what the run introduced, entity by entity);
IDS checks compare the whole model before and after; clash and clearance checks run ifcclash on both and keep
the clashes of changed elements that were not there before: against the session's reference models (the execute's
`refs`) when it has any, else within the working model. Script checks (check skills) run the team's code,
which the keeper never executes: they run over whole models (`nexus check`, `nexus batch`, on demand), not here.

Under `block` an introduced error rolls the automation back (nothing committed), as validation does; warnings
and infos are reported. Every finding the run introduced, validation's included, is also given in the one
finding type (ifc_host/findings.py) as `validation.unified`, for the session's findings and BCF.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import ifcopenshell

from ifc_host.changes import ChangeSet
from ifc_host.findings import ElementRef, Finding, from_validation
from ifc_host.refs import ReferenceCache
from ifc_host.rule_set import RuleSet, RuleSetProblem, parse_rule_set, with_check
from ifc_host.rules import ids_findings
from ifc_host.validation import MAX_REPORTED, introduced_findings

MAX_UNIFIED = 200
_REFERENCES = ReferenceCache()  # the keeper's copy for the checks (the script's process opens its own)


def apply_rules(before: ifcopenshell.file, after: ifcopenshell.file, changes: ChangeSet, job: dict[str, Any],
                result: dict[str, Any], model_name: str, same_model: bool) -> None:
    """Add the rule set's introduced findings to `result` (failures, validation.rules); under block, fail it.
    Also give every introduced finding (validation's and the rule set's) as validation.unified."""
    validation = result.get("validation")
    document = job.get("rules")
    if document and job.get("mode") == "automate":
        validation = result.setdefault("validation", {"mode": job.get("validation") or "warn", "checked": 0,
                                                      "introduced": 0, "findings": []})
        try:
            rules = parse_rule_set(document)
        except RuleSetProblem as exc:
            result["failures"].append({"severity": "warning", "message": f"the rule set was not run: {exc}"})
            rules = None
        if rules is not None:
            found = [] if same_model else _introduced(rules, before, after, changes, model_name,
                                                      _references(job) if rules.needs_clash() else {})
            _report(rules, found, job.get("validation"), result)
            validation["rules"] = {"name": rules.name, "introduced": len(found),
                                   "findings": [f.as_json() for f in found[:MAX_UNIFIED]]}
    if validation is not None:
        validation["changed_elements"] = _changed_elements(after, changes, model_name)
        unified = [from_validation(SimpleNamespace(
            entity_id=f.get("entity_id"), entity_class=f.get("class"), attribute=f.get("attribute"),
            rule=f.get("rule"), message=f.get("message"), kind=f.get("kind")), after, model_name,
            severity="error" if validation.get("mode") == "block" else "warning").as_json()
            for f in validation.get("findings") or []]
        ruled = (validation.get("rules") or {}).get("findings") or []
        covered = {(f["title"], tuple(e["global_id"] for e in f["elements"])) for f in ruled}
        unified = ruled + [f for f in unified
                           if (f["title"], tuple(e["global_id"] for e in f["elements"])) not in covered]
        validation["unified"] = unified[:MAX_UNIFIED]


def _changed_elements(after: ifcopenshell.file, changes: ChangeSet, model_name: str) -> list[dict[str, Any]]:
    """The elements the run added or modified, by GlobalId (for BCF viewpoints of a fix)."""
    out = []
    for entity_id in sorted(changes.created | changes.edited):
        try:
            entity = after.by_id(entity_id)
        except RuntimeError:
            continue  # deleted
        if getattr(entity, "GlobalId", None) and entity.is_a("IfcProduct"):
            out.append(ElementRef.of(entity, model_name).as_json())
            if len(out) >= MAX_UNIFIED:
                break
    return out


def _introduced(rules: RuleSet, before: ifcopenshell.file, after: ifcopenshell.file, changes: ChangeSet,
                model_name: str, refs: dict[str, ifcopenshell.file]) -> list[Finding]:
    out: list[Finding] = []
    validation: list[Any] | None = None
    for check in rules.checks:
        if check.kind in ("schema", "model rule"):
            if validation is None:
                validation = introduced_findings(after, changes, before)[0]
            wanted = "schema" if check.kind == "schema" else "model rule"
            found = [from_validation(f, after, model_name) for f in validation if f.kind == wanted]
        elif check.kind == "ids":
            found = _new(ids_findings(before, check.ids_xml or "", model_name),
                         ids_findings(after, check.ids_xml or "", model_name))
        elif check.kind in ("clash", "clearance"):
            found = _new_clashes(check, before, after, changes, model_name, refs)
        else:
            continue
        out += with_check(found, check)
    return out


def _key(finding: Finding) -> tuple[Any, ...]:
    return finding.rule, finding.title, tuple(sorted(e.global_id for e in finding.elements))


def _new(before: list[Finding], after: list[Finding]) -> list[Finding]:
    old = {_key(f) for f in before}
    return [f for f in after if _key(f) not in old]


def _references(job: dict[str, Any]) -> dict[str, ifcopenshell.file]:
    """The session's reference models (the execute's `refs`), opened once and kept while their files are
    unchanged; {} when there are none. One that cannot be opened failed the script before it ran (BadReference)."""
    from ifc_host.refs import specs_of

    if not job.get("refs"):
        return {}
    return {loaded.spec.name: loaded.file for loaded in _REFERENCES.load(specs_of(job["refs"]))}


def _new_clashes(check: Any, before: ifcopenshell.file, after: ifcopenshell.file, changes: ChangeSet,
                 model_name: str, refs: dict[str, ifcopenshell.file]) -> list[Finding]:
    """Clashes of the changed elements that were not there before: against the session's references when it has
    any (only the changed elements of the working model are meshed), else within the working model."""
    from ifc_host.clash import DEFAULT_TOLERANCE, clash_findings

    changed = set()
    for entity_id in changes.created | changes.edited:
        for model in (after, before):
            try:
                guid = getattr(model.by_id(entity_id), "GlobalId", None)
            except RuntimeError:
                continue
            if guid:
                changed.add(guid)
    if not changed:
        return []

    def clashes(model: ifcopenshell.file, folder: str) -> list[Finding]:
        key = str(Path(folder) / model_name)  # ifcclash names models by path; these are already open
        found = clash_findings(key, list(refs), models={key: model, **refs}, only=changed if refs else None,
                               clearance=check.distance if check.kind == "clearance" else None,
                               tolerance=DEFAULT_TOLERANCE if check.tolerance is None else check.tolerance)
        return [f for f in found if any(e.global_id in changed for e in f.elements)]

    old = {frozenset(e.global_id for e in f.elements) for f in clashes(before, "before")}
    return [f for f in clashes(after, "after") if frozenset(e.global_id for e in f.elements) not in old]


def _report(rules: RuleSet, found: list[Finding], mode: str | None, result: dict[str, Any]) -> None:
    block = mode == "block"
    for finding in found[:MAX_REPORTED]:
        severity = "error" if block and finding.severity == "error" else "warning"
        result["failures"].append({"severity": severity, "message": (
            f"rule set '{rules.name}': {finding.severity}: {finding.rule}: {finding.title}"),
            "element_ids": [e.step_id for e in finding.elements if e.step_id is not None]})
    if len(found) > MAX_REPORTED:
        result["failures"].append({"severity": "warning", "message": (
            f"rule set '{rules.name}': {len(found) - MAX_REPORTED} more findings are not listed")})
    errors = [f for f in found if f.severity == "error"]
    if block and errors and result.get("ok"):
        result["ok"] = False
        result["error"] = {"type": "RuleSetFailed", "line": None, "traceback": "", "message": (
            f"validation is set to block and the script introduced {len(errors)} error finding(s) of the rule set "
            f"'{rules.name}' (listed under failures); nothing was committed and the model is unchanged. First: "
            f"{errors[0].rule}: {errors[0].title}")}
