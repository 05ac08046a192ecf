"""IDS checks after an automation: the requirements of an Information Delivery Specification (buildingSMART IDS,
checked with IfcOpenShell's ifctester) that fail after the run but did not fail before it.

The IDS comes with the execute request (`ids`, the XML text). The whole model is checked before the script runs
(the state before is gone once the script has run) and again afterwards; a failure is keyed by specification,
requirement and element, and only keys that are new after the run are reported, like schema findings
(ifc_host/validation.py): entity, requirement, why. A specification-level failure (a required specification that
no longer applies to anything, a prohibited one that now applies) is reported when the run caused it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import ifcopenshell

from ifc_host.ids_reader import IdsProblem, parsed_ids
from ifc_host.validation import MAX_REPORTED, Finding


@dataclass
class IdsState:
    """The failures of one IDS on one state of the model."""
    failures: dict[tuple[int, int, int], tuple[str, str, str]] = field(default_factory=dict)
    # (specification, requirement, element id) -> (element class, requirement text, reason)
    spec_failures: dict[int, str] = field(default_factory=dict)  # specification -> why it fails as a whole
    applicable: dict[int, dict[int, str]] = field(default_factory=dict)  # specification -> {id: class} it applies to
    names: dict[int, str] = field(default_factory=dict)
    other_version: dict[int, str] = field(default_factory=dict)  # specification -> the IFC versions it is for


def check_model(model: ifcopenshell.file, ids: Any) -> IdsState:
    """Validate the whole model and collect every failure, keyed so two states can be compared."""
    ids.validate(model, should_filter_version=True)
    state = IdsState()
    for s, spec in enumerate(ids.specifications):
        state.names[s] = spec.name
        if not spec.is_ifc_version:
            state.other_version[s] = " ".join(spec.ifcVersion or [])
            continue
        state.applicable[s] = {e.id(): e.is_a() for e in spec.applicable_entities}
        if spec.maxOccurs == 0:
            if spec.applicable_entities:
                state.spec_failures[s] = "prohibited"
            continue
        for r, facet in enumerate(spec.requirements):
            text = _requirement_text(facet, spec)
            for failure in facet.failures:
                element = failure["element"]
                state.failures[(s, r, element.id())] = (element.is_a(), text, failure["reason"])
        if spec.minOccurs != 0 and not spec.applicable_entities:
            state.spec_failures[s] = "required"
    return state


def _requirement_text(facet: Any, spec: Any) -> str:
    try:
        return facet.to_string("requirement", spec, facet)
    except Exception:  # a facet whose template cannot be filled is still named by its kind
        return type(facet).__name__


def introduced(before: IdsState, after: IdsState) -> list[Finding]:
    """The failures after the run that were not there before it."""
    findings: list[Finding] = []
    for (s, r, element_id), (cls, requirement, reason) in after.failures.items():
        if (s, r, element_id) in before.failures:
            continue
        findings.append(Finding(element_id, cls, None, f"IDS '{after.names[s]}'",
                                f"{requirement}: {reason}", kind="ids"))
    for s, why in after.spec_failures.items():
        new = sorted(set(after.applicable[s]) - set(before.applicable.get(s, {})))
        if why == "prohibited":
            for element_id in new:
                findings.append(Finding(element_id, after.applicable[s][element_id], None, f"IDS '{after.names[s]}'",
                                        "the specification prohibits this element", kind="ids"))
        elif before.spec_failures.get(s) != why:
            findings.append(Finding(0, "", None, f"IDS '{after.names[s]}'",
                                    "the specification is required but no longer applies to any element",
                                    kind="ids"))
    return findings


class IdsRun:
    """One automation's IDS check: `start` on the model before the run, `finish` on the model after it (the
    keeper runs both: on the committed model and on the model the run wrote)."""

    def __init__(self, text: str) -> None:
        self.problem: str | None = None
        self.ids: Any = None
        self.before: IdsState | None = None
        try:
            self.ids = parsed_ids(text)
        except IdsProblem as exc:
            self.problem = str(exc)

    def start(self, model: ifcopenshell.file, known: IdsState | None = None) -> None:
        """Check the model before the run (or take `known`, its state from an earlier check)."""
        if self.ids is None:
            return
        if known is not None:
            self.before = known
            return
        try:
            self.before = check_model(model, self.ids)
        except Exception as exc:  # an ifctester bug must not cost the person their automation
            self.problem = f"the IDS check failed on the model before the run ({type(exc).__name__}: {exc})"

    def finish(self, model: ifcopenshell.file, mode: str | None, result: dict[str, Any],
               same_model: bool = False) -> IdsState | None:
        """Add the IDS failures the run introduced to `result` like schema findings; under block, fail the run.
        `same_model`: the run changed nothing, so the model after it is the one checked before. Returns the
        state after the run (None when it could not be checked)."""
        if self.problem is not None or self.before is None:
            result["failures"].append({"severity": "warning", "message": (
                f"IDS: {self.problem or 'not checked'}; the run was not checked against the IDS")})
            return None
        try:
            after = self.before if same_model else check_model(model, self.ids)
            findings = introduced(self.before, after)
        except Exception as exc:
            result["failures"].append({"severity": "warning", "message": (
                f"IDS: the check failed after the run ({type(exc).__name__}: {exc}); the run was not checked "
                "against the IDS")})
            return None
        other_version = self.before.other_version
        if other_version:
            skipped = ", ".join(f"'{self.before.names[s]}' ({versions})" for s, versions in other_version.items())
            result["failures"].append({"severity": "warning", "message": (
                f"IDS: {len(other_version)} specification(s) are for other IFC versions than this model's "
                f"{model.schema_identifier} and were not checked: {skipped}")})
        block = mode == "block"
        validation = result.setdefault("validation", {"mode": mode if block else "warn", "checked": 0,
                                                      "introduced": 0, "findings": []})
        validation["ids"] = {"specifications": len(self.ids.specifications), "introduced": len(findings)}
        validation["introduced"] += len(findings)
        room = max(0, MAX_REPORTED - len(validation["findings"]))
        validation["findings"] += [f.as_dict() for f in findings[:room]]
        if not findings:
            return after
        severity = "error" if block else "warning"
        for finding in findings[:room]:
            result["failures"].append({"severity": severity, "message": "validation: " + finding.sentence(),
                                       "element_ids": [finding.entity_id] if finding.entity_id else []})
        if len(findings) > room:
            result["failures"].append({"severity": severity, "message": (
                f"validation: {len(findings) - room} more IDS failures introduced by this script are not listed")})
        if block and result.get("ok"):
            result["ok"] = False
            result["error"] = {"type": "ValidationFailed", "line": None, "traceback": "", "message": (
                f"validation is set to block and the script introduced {len(findings)} IDS failure(s) (listed "
                f"under failures); nothing was committed and the model is unchanged. First: "
                f"{findings[0].sentence()}")}
        return after
