"""Validation after every automation: schema errors and model-rule findings the script introduced.

Checked: every entity the run created or edited, and every entity those reference directly (a new relationship
can break the inverse cardinality of an untouched entity). The per-attribute checks are IfcOpenShell's own
(`ifcopenshell.validate`: non-optional attributes, value types, aggregate bounds, inverse cardinalities, GlobalId
encoding and uniqueness), applied entity by entity instead of to the whole file.

Only what the run introduced is reported: an error on an attribute the run did not change, an inverse
whose population it did not change, or an entity it did not touch, was there before and is not the
script's doing. (An attribute the run changed from one invalid value to another counts as introduced.)
Model rules: a door or window must fill an opening (IfcRelFillsElement), or it cuts no hole in its wall.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ifcopenshell
import ifcopenshell.validate

from ifc_host.change_details import ModelView
from ifc_host.changes import ChangeSet, Ref, plain_value

MODES = ("warn", "block")
DEFAULT_MODE = "warn"
MAX_REPORTED = 25
FILLING_CLASSES = ("IfcDoor", "IfcWindow")


@dataclass(frozen=True)
class Finding:
    entity_id: int
    entity_class: str
    attribute: str | None
    rule: str
    message: str
    kind: str = "schema"  # "schema" | "model rule"

    def as_dict(self) -> dict[str, Any]:
        return {"entity_id": self.entity_id, "class": self.entity_class, "attribute": self.attribute,
                "rule": self.rule, "message": self.message, "kind": self.kind}

    def sentence(self) -> str:
        where = f"#{self.entity_id}={self.entity_class}" + (f".{self.attribute}" if self.attribute else "")
        return f"{self.kind} {self.rule}: {where}: {self.message}"


def introduced_findings(model: ifcopenshell.file, changes: ChangeSet,
                        before_model: ifcopenshell.file | None = None) -> tuple[list[Finding], int]:
    """What the run introduced, and how many entities were checked. `before_model`: the model before the run
    as its own file (the keeper's committed model), where an existing GlobalId a new one repeats is found
    (a model parsed with two entities under one GlobalId registers only one of them)."""
    checker = _Checker(model, changes, before_model)
    return checker.run()


class _Checker:
    def __init__(self, model: ifcopenshell.file, changes: ChangeSet,
                 before_model: ifcopenshell.file | None = None) -> None:
        self.model = model
        self.before_model = before_model
        self.changes = changes
        self.schema = ifcopenshell.ifcopenshell_wrapper.schema_by_name(model.schema_identifier)
        self.before = ModelView(model, changes)
        self.now = ModelView(model)
        self._changed: dict[int, set[int]] = {}  # attribute indices the run changed, per edited entity
        # Entities whose inverse attributes may have changed: a reference to them was added or removed.
        self._relinked: set[int] = set(changes.created)

    def run(self) -> tuple[list[Finding], int]:
        changed = [e for e in (self._alive(i) for i in sorted(self.changes.created | self.changes.edited))
                   if e is not None]
        checked: dict[int, ifcopenshell.entity_instance] = {e.id(): e for e in changed}
        for entity in changed:
            snapshot = self.changes.before.get(entity.id())
            changed_indices = self._changed[entity.id()] = set()
            for index in range(len(entity)):
                value = entity[index]
                if snapshot is not None and snapshot.values[index] == plain_value(value):
                    continue  # an unchanged reference changed nothing about what it points to
                changed_indices.add(index)
                for referenced in _entities(value):
                    checked.setdefault(referenced.id(), referenced)
                    self._relinked.add(referenced.id())
                for referenced_id in _snapshot_refs(snapshot.values[index]) if snapshot is not None else ():
                    self._relinked.add(referenced_id)  # what it no longer points to may have lost an inverse
                    old = self._alive(referenced_id)
                    if old is not None:
                        checked.setdefault(referenced_id, old)
        for entity_id, snapshot in self.changes.before.items():
            if entity_id in self.changes.edited:
                continue  # deleted by the run: what it pointed to lost an inverse
            for referenced_id in _snapshot_refs(snapshot.values):
                old = self._alive(referenced_id)
                if old is not None:
                    self._relinked.add(referenced_id)
                    checked.setdefault(referenced_id, old)
        findings: list[Finding] = []
        new_guids: dict[str, int] = {}
        for entity_id, entity in checked.items():
            findings += self._schema(entity)
            has_guid = "GlobalId" in self.now.attribute_names(entity.is_a())
            if has_guid and (entity_id in self.changes.created or self._attribute_changed(entity, "GlobalId")):
                findings += self._guid(entity, new_guids)
        # Over every entity checked, not only the edited: taking a door out of its opening removes a relation
        # and leaves the door's own record as it was.
        findings += self._model_rules(list(checked.values()))
        return findings, len(checked)

    def _alive(self, entity_id: int) -> ifcopenshell.entity_instance | None:
        try:
            return self.model.by_id(entity_id)
        except RuntimeError:
            return None

    def _is_new(self, entity: ifcopenshell.entity_instance) -> bool:
        return entity.id() in self.changes.created

    def _attribute_changed(self, entity: ifcopenshell.entity_instance, name: str) -> bool:
        if self._is_new(entity):
            return True
        changed = self._changed.get(entity.id())
        return bool(changed) and self.now.attribute_names(entity.is_a())[name] in changed

    def _schema(self, entity: ifcopenshell.entity_instance) -> list[Finding]:
        declaration, attributes = ifcopenshell.validate.get_entity_attributes(self.schema, entity.is_a())
        cls = entity.is_a()
        touched = self._is_new(entity) or entity.id() in self.changes.before
        out: list[Finding] = []
        if declaration.is_abstract() and self._is_new(entity):
            out.append(Finding(entity.id(), cls, None, "abstract entity", f"{cls} is abstract and cannot be instantiated"))
        if touched:
            derived = declaration.derived()
            indices = range(len(attributes)) if self._is_new(entity) else sorted(self._changed.get(entity.id(), ()))
            for index in indices:
                if derived[index]:
                    continue
                attribute = attributes[index]
                problem = self._attribute_problem(entity, index, attribute)
                if problem:
                    out.append(Finding(entity.id(), cls, attribute.name(), problem[0], problem[1]))
        if entity.id() not in self._relinked:
            return out  # no reference to it was added or removed: its inverses are as they were
        for inverse in _constrained_inverses(declaration):
            try:
                now = len(getattr(entity, inverse.name()))
            except Exception:  # noqa: S112 - an inverse IfcOpenShell cannot evaluate is not a finding of this run
                continue
            if _count_ok(inverse, now):
                continue
            if not self._is_new(entity) and not _count_ok(inverse, self._inverse_count_before(entity, inverse)):
                continue  # just as wrong before the run
            bounds = f"[{inverse.bound1()}:{'?' if inverse.bound2() == -1 else inverse.bound2()}]"
            out.append(Finding(entity.id(), cls, inverse.name(), "inverse cardinality", (
                f"{now} {inverse.entity_reference().name()}.{inverse.attribute_reference().name()} point here; "
                f"the schema allows {bounds}")))
        return out

    def _attribute_problem(self, entity: ifcopenshell.entity_instance, index: int,
                           attribute: Any) -> tuple[str, str] | None:
        try:
            value = entity[index]
        except Exception as exc:
            return "invalid value", str(exc).strip().splitlines()[0] if str(exc).strip() else "unreadable value"
        if value is None:
            return None if attribute.optional() else ("not optional", "the attribute is required but empty")
        try:
            ifcopenshell.validate.assert_valid(attribute.type_of_attribute(), value, self.schema, attr=attribute)
        except ifcopenshell.validate.ValidationError:
            shown = repr(value)
            shown = shown if len(shown) <= 120 else shown[:119] + "…"
            return "attribute type", f"{shown} is not a valid {attribute.type_of_attribute()}"
        return None

    def _inverse_count_before(self, entity: ifcopenshell.entity_instance, inverse: Any) -> int:
        source_cls = inverse.entity_reference().name()
        source_attribute = inverse.attribute_reference().name()
        count = 0
        for referrer in self.before.referrers(entity.id()):
            if self.before.is_a(referrer, source_cls):
                value = self.before.get(referrer, source_attribute)
                if value == entity.id() or (isinstance(value, tuple) and entity.id() in value):
                    count += 1
        return count

    def _guid(self, entity: ifcopenshell.entity_instance, seen: dict[str, int]) -> list[Finding]:
        guid = getattr(entity, "GlobalId", None)
        if not isinstance(guid, str):
            return []
        cls = entity.is_a()
        problem = ifcopenshell.validate.validate_guid(guid)
        if problem:
            return [Finding(entity.id(), cls, "GlobalId", "GlobalId encoding", problem)]
        other = seen.get(guid)
        if other is None:
            try:
                registered = self.model.by_guid(guid)
            except RuntimeError:
                registered = None
            other = registered.id() if registered is not None and registered.id() != entity.id() else None
        if other is None and self.before_model is not None:
            other = self._holder_before(guid, entity.id())
        seen.setdefault(guid, entity.id())
        if other is not None and other != entity.id():
            return [Finding(entity.id(), cls, "GlobalId", "IfcRoot.UR1 unique GlobalId",
                            f"{guid} is also the GlobalId of #{other}")]
        return []

    def _holder_before(self, guid: str, entity_id: int) -> int | None:
        """Another entity that had this GlobalId before the run and still has it."""
        try:
            holder = self.before_model.by_guid(guid)  # type: ignore[union-attr]
        except RuntimeError:
            return None
        if holder is None or holder.id() == entity_id:
            return None
        still = self._alive(holder.id())
        return holder.id() if still is not None and getattr(still, "GlobalId", None) == guid else None

    def _model_rules(self, entities: list[ifcopenshell.entity_instance]) -> list[Finding]:
        out: list[Finding] = []
        for entity in entities:
            if not any(entity.is_a(c) for c in FILLING_CLASSES) or entity.is_a("IfcTypeObject"):
                continue
            if getattr(entity, "FillsVoids", None):
                continue
            if not self._is_new(entity) and not self._filled_before(entity):
                continue  # it filled no opening before the run either
            cls = entity.is_a()
            out.append(Finding(entity.id(), cls, "FillsVoids", "filling without an opening", (
                f"the {cls[3:].lower()} fills no IfcOpeningElement, so it cuts no hole in any wall: create an opening "
                "in the host wall (ifcopenshell.api.feature.add_feature) and fill it (feature.add_filling)"),
                kind="model rule"))
        return out

    def _filled_before(self, entity: ifcopenshell.entity_instance) -> bool:
        for referrer in self.before.referrers(entity.id()):
            if self.before.is_a(referrer, "IfcRelFillsElement") and \
                    self.before.get(referrer, "RelatedBuildingElement") == entity.id():
                return True
        return False


_CONSTRAINED: dict[str, tuple[Any, ...]] = {}


def _constrained_inverses(declaration: Any) -> tuple[Any, ...]:
    """Inverse attributes whose population the schema bounds (an unbounded SET [0:?] is always valid)."""
    name = declaration.name()
    found = _CONSTRAINED.get(name)
    if found is None:
        found = _CONSTRAINED[name] = tuple(
            a for a in declaration.all_inverse_attributes() if not (a.bound1() <= 0 and a.bound2() == -1))
    return found


def _count_ok(inverse: Any, count: int) -> bool:
    low, high = inverse.bound1(), inverse.bound2()
    if (low, high) == (-1, -1):
        return count == 1
    return count >= low and (high == -1 or count <= high)


def _snapshot_refs(value: Any) -> list[int]:
    if isinstance(value, Ref):
        return [int(value)]
    if isinstance(value, tuple):
        return [i for item in value for i in _snapshot_refs(item)]
    return []


def _entities(value: Any) -> list[ifcopenshell.entity_instance]:
    if isinstance(value, ifcopenshell.entity_instance):
        return [value] if value.id() else []
    if isinstance(value, tuple):
        return [e for item in value for e in _entities(item)]
    return []


def validate_run(model: ifcopenshell.file, changes: ChangeSet, mode: str | None, result: dict[str, Any],
                 before_model: ifcopenshell.file | None = None) -> None:
    """Add what the run introduced to `result` (failures, `validation`); under `block`, fail the run."""
    mode = mode if mode in MODES else DEFAULT_MODE
    try:
        findings, checked = introduced_findings(model, changes, before_model)
    except Exception as exc:  # a validator bug must not cost the person their automation
        result["failures"].append({"severity": "warning", "message": (
            f"validation could not be completed ({type(exc).__name__}: {exc}); the run was not validated")})
        return
    result["validation"] = {"mode": mode, "checked": checked, "introduced": len(findings),
                            "findings": [f.as_dict() for f in findings[:MAX_REPORTED]]}
    if not findings:
        return
    severity = "error" if mode == "block" else "warning"
    for finding in findings[:MAX_REPORTED]:
        result["failures"].append({"severity": severity, "message": "validation: " + finding.sentence(),
                                   "element_ids": [finding.entity_id]})
    if len(findings) > MAX_REPORTED:
        result["failures"].append({"severity": severity, "message": (
            f"validation: {len(findings) - MAX_REPORTED} more findings introduced by this script are not listed")})
    if mode == "block":
        result["ok"] = False
        result["error"] = {"type": "ValidationFailed", "line": None, "traceback": "", "message": (
            f"validation is set to block and the script introduced {len(findings)} schema or model-rule "
            f"finding(s) (listed under failures); nothing was committed and the model is unchanged. First: "
            f"{findings[0].sentence()}")}
