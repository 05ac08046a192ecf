"""One finding type for everything the product detects: IDS failures, schema and model-rule findings, clashes.

A finding names what check found it (`rule`), how bad it is (`severity`), says what is wrong in plain words (`title`,
`description`), and lists the elements it is about, each with the model (file name) it belongs to, so findings over
federated models stay unambiguous. Clashes also carry the point where the elements meet and their distance.
`as_json`/`from_json` are its JSON form (the `--json` output of `nexus check`, one object per finding).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class ElementRef:
    global_id: str
    ifc_class: str
    name: str | None
    model: str  # the model's file name
    step_id: int | None = None  # the entity's #id in its file, when known (for drawing it)

    def as_json(self) -> dict[str, Any]:
        return {"global_id": self.global_id, "ifc_class": self.ifc_class, "name": self.name, "model": self.model,
                "step_id": self.step_id}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ElementRef:
        return cls(str(data["global_id"]), str(data["ifc_class"]), data.get("name"), str(data["model"]),
                   data.get("step_id"))

    @classmethod
    def of(cls, entity: Any, model: str) -> ElementRef:
        """The reference to an ifcopenshell entity of the model file named `model`."""
        return cls(getattr(entity, "GlobalId", "") or "", entity.is_a(), getattr(entity, "Name", None), model,
                   entity.id())

    def label(self) -> str:
        name = (self.name or "").strip()
        return f"{self.ifc_class} '{name}'" if name else self.ifc_class


@dataclass(frozen=True)
class Finding:
    rule: str  # the check: "clash", "clearance", "schema <rule>", "IDS '<specification>'", ...
    severity: str  # error | warning | info
    title: str
    description: str = ""
    elements: tuple[ElementRef, ...] = field(default_factory=tuple)
    point: tuple[float, float, float] | None = None
    distance: float | None = None

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}, got {self.severity!r}")

    def as_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "title": self.title, "description": self.description,
                "elements": [e.as_json() for e in self.elements],
                "point": list(self.point) if self.point is not None else None, "distance": self.distance}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        point = data.get("point")
        return cls(str(data["rule"]), str(data["severity"]), str(data["title"]), str(data.get("description") or ""),
                   tuple(ElementRef.from_json(e) for e in data.get("elements") or ()),
                   (float(point[0]), float(point[1]), float(point[2])) if point is not None else None,
                   float(data["distance"]) if data.get("distance") is not None else None)


def from_validation(finding: Any, model: Any, model_name: str, severity: str = "error") -> Finding:
    """A schema, model-rule or IDS finding of ifc_host/validation.py (or ids_check.py) in this form."""
    elements: tuple[ElementRef, ...] = ()
    if finding.entity_id:
        try:
            elements = (ElementRef.of(model.by_id(finding.entity_id), model_name),)
        except RuntimeError:  # deleted since: keep what the finding itself knows
            elements = (ElementRef("", finding.entity_class, None, model_name, finding.entity_id),)
    where = f".{finding.attribute}" if finding.attribute else ""
    return Finding(rule=finding.rule if finding.kind == "ids" else f"{finding.kind} {finding.rule}",
                   severity=severity, title=f"{finding.entity_class or 'model'}{where}: {finding.rule}",
                   description=finding.message, elements=elements)
