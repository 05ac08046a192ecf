"""Findings as a BCF archive (2.1 or 3.0), written with bcf-client.

One topic per finding, or with `group=True` one per rule holding up to `GROUP_LIMIT` findings' elements. Each topic
has the finding's title and description, its rule as the topic type and a label, a priority from its severity, the
author and the creation date, status Open, and one viewpoint: its components select the elements by IFC GlobalId and
colour them red, its perspective camera frames their bounding boxes (from IfcOpenShell's geometry), and its snapshot
is the product's own 3D rendering of them (ifc_host/render.py), drawn from the model that holds the first element.
"""
from __future__ import annotations

import datetime
import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ifcopenshell
import ifcopenshell.geom
from xsdata.models.datatype import XmlDateTime

from cloud.bcf.archive import VERSIONS
from ifc_host.findings import ElementRef, Finding

PRIORITY = {"error": "Critical", "warning": "Normal", "info": "Minor"}
GROUP_LIMIT = 50  # findings in one grouped topic
COLOUR = "FFFF0000"  # ARGB: the elements of a finding in red
FIELD_OF_VIEW = 60.0
SNAPSHOT_PX = 800
ASPECT_RATIO = 4 / 3


class BcfExportProblem(ValueError):
    """An export that cannot be written as asked (an unknown version)."""


@dataclass(frozen=True)
class Bounds:
    low: tuple[float, float, float]
    high: tuple[float, float, float]


def export_findings(findings: Sequence[Finding], out: str | Path, *, version: str = "2.1",
                    models: dict[str, str | Path] | None = None, author: str = "nexus check",
                    project_name: str = "NexusAI findings", group: bool = False, snapshots: bool = True,
                    snapshot_px: int = SNAPSHOT_PX, progress: Callable[[int, int], None] | None = None,
                    snapshot_of: Callable[[list[Finding]], bytes | None] | None = None) -> Path:
    """Write `findings` as a BCF archive at `out`. `models` maps a model's file name (ElementRef.model) to its path:
    the models whose elements get a camera and a snapshot (elements of other models get components only).
    `snapshot_of(topic's findings)`: a PNG already made of them (a session's captured image), else rendered."""
    if version not in VERSIONS:
        raise BcfExportProblem(f"BCF version must be one of {', '.join(VERSIONS)}, got {version!r}")
    paths = {name: Path(path) for name, path in (models or {}).items()}
    geometry = _Geometry(paths)
    topics = _grouped(findings) if group else [[f] for f in findings]
    if version == "2.1":
        import bcf.v2.model as mdl
        import bcf.v2.visinfo as visinfo
        from bcf.v2.bcfxml import BcfXml
    else:
        import bcf.v3.model as mdl  # type: ignore[no-redef]
        import bcf.v3.visinfo as visinfo  # type: ignore[no-redef]
        from bcf.v3.bcfxml import BcfXml  # type: ignore[assignment]
    document = BcfXml.create_new(project_name)
    if version != "2.1":  # BCF 3.0 declares the topic types, statuses, priorities and labels an archive uses
        rules = list(dict.fromkeys(f.rule for f in findings))
        document.extensions = mdl.Extensions(
            topic_types=mdl.ExtensionsTopicTypes(topic_type=rules),
            topic_statuses=mdl.ExtensionsTopicStatuses(topic_status=["Open"]),
            priorities=mdl.ExtensionsPriorities(priority=list(PRIORITY.values())),
            topic_labels=mdl.ExtensionsTopicLabels(topic_label=[*rules, *PRIORITY]))
    now = XmlDateTime.from_datetime(datetime.datetime.now(datetime.UTC).replace(microsecond=0))
    for index, members in enumerate(topics):
        first = members[0]
        title = first.title if len(members) == 1 else f"{first.rule}: {len(members)} findings"
        description = first.description if len(members) == 1 else "\n".join(f"- {m.title}" for m in members)
        severity = min((m.severity for m in members), key=("error", "warning", "info").index)
        topic = document.add_topic(title[:255], description, author, topic_type=first.rule, topic_status="Open")
        topic.topic.priority = PRIORITY[severity]
        topic.topic.creation_date = now
        labels = [first.rule, severity]
        if version == "2.1":
            topic.topic.labels = labels
        else:
            topic.topic.labels = mdl.TopicLabels(label=labels)
        elements = list(dict.fromkeys(e for m in members for e in m.elements if e.global_id))
        handler = visinfo.VisualizationInfoHandler(_visualization_info(mdl, version, elements, members,
                                                                       geometry))
        snapshot = snapshot_of(members) if snapshot_of is not None else None
        if snapshot is None and snapshots:
            snapshot = _snapshot(elements, paths, snapshot_px)
        if snapshot is not None:
            handler.snapshot = snapshot
        topic.add_visinfo_handler(handler, "snapshot.png" if snapshot is not None else None)
        if progress is not None:
            progress(index + 1, len(topics))
    out = Path(out)
    document.save(out)
    return out


def _grouped(findings: Sequence[Finding]) -> list[list[Finding]]:
    by_rule: dict[str, list[list[Finding]]] = {}
    for finding in findings:
        groups = by_rule.setdefault(finding.rule, [[]])
        if len(groups[-1]) >= GROUP_LIMIT:
            groups.append([])
        groups[-1].append(finding)
    return [group for groups in by_rule.values() for group in groups]


def _visualization_info(mdl: Any, version: str, elements: list[ElementRef], members: list[Finding],
                        geometry: _Geometry) -> Any:
    def components() -> list[Any]:
        return [mdl.Component(ifc_guid=e.global_id, originating_system=e.model) for e in elements]

    if version == "2.1":
        coloring = mdl.ComponentColoring(color=[mdl.ComponentColoringColor(color=COLOUR, component=components())])
    else:
        coloring = mdl.ComponentColoring(color=[mdl.ComponentColoringColor(
            color=COLOUR, components=mdl.ComponentColoringColorComponents(component=components()))])
    info = mdl.VisualizationInfo(guid=str(uuid.uuid4()), components=mdl.Components(
        selection=mdl.ComponentSelection(component=components()),
        visibility=mdl.ComponentVisibility(default_visibility=True),
        coloring=coloring))
    bounds = geometry.bounds(elements)
    if bounds is None:  # no body anywhere: frame the finding's point, if it has one
        points = [m.point for m in members if m.point is not None]
        if points:
            bounds = Bounds(tuple(min(p[i] for p in points) - 1 for i in range(3)),  # type: ignore[arg-type]
                            tuple(max(p[i] for p in points) + 1 for i in range(3)))  # type: ignore[arg-type]
    if bounds is not None:
        position, direction, up = frame(bounds)
        camera: dict[str, Any] = {"camera_view_point": mdl.Point(x=position[0], y=position[1], z=position[2]),
                                  "camera_direction": mdl.Direction(x=direction[0], y=direction[1], z=direction[2]),
                                  "camera_up_vector": mdl.Direction(x=up[0], y=up[1], z=up[2]),
                                  "field_of_view": FIELD_OF_VIEW}
        if version != "2.1":
            camera["aspect_ratio"] = ASPECT_RATIO
        info.perspective_camera = mdl.PerspectiveCamera(**camera)
    return info


def frame(bounds: Bounds) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
    """A perspective camera (position, direction, up) that sees the whole box: from the south-west, above it, at the
    distance where the box's bounding sphere fills the field of view."""
    centre = [(lo + hi) / 2 for lo, hi in zip(bounds.low, bounds.high, strict=True)]
    radius = max(0.5, math.dist(bounds.low, bounds.high) / 2)
    direction = _unit((1.0, 1.0, -0.8))
    distance = radius / math.sin(math.radians(FIELD_OF_VIEW) / 2)
    position = tuple(round(c - d * distance, 4) for c, d in zip(centre, direction, strict=True))
    right = _unit(_cross(direction, (0.0, 0.0, 1.0)))
    up = _unit(_cross(right, direction))
    return position, tuple(round(d, 6) for d in direction), tuple(round(u, 6) for u in up)


def _unit(v: Sequence[float]) -> tuple[float, float, float]:
    length = math.sqrt(sum(c * c for c in v))
    return (v[0] / length, v[1] / length, v[2] / length)


def _cross(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


class _Geometry:
    """World-coordinate bounding boxes of elements, built once per element."""

    def __init__(self, paths: dict[str, Path]) -> None:
        self.paths = paths
        self.files: dict[str, ifcopenshell.file] = {}
        self.boxes: dict[tuple[str, str], Bounds | None] = {}
        self.settings = ifcopenshell.geom.settings()
        self.settings.set("use-world-coords", True)

    def bounds(self, elements: list[ElementRef]) -> Bounds | None:
        boxes = [b for b in (self._box(e) for e in elements) if b is not None]
        if not boxes:
            return None
        return Bounds(tuple(min(b.low[i] for b in boxes) for i in range(3)),  # type: ignore[arg-type]
                      tuple(max(b.high[i] for b in boxes) for i in range(3)))  # type: ignore[arg-type]

    def _box(self, element: ElementRef) -> Bounds | None:
        key = (element.model, element.global_id)
        if key not in self.boxes:
            self.boxes[key] = self._build(element)
        return self.boxes[key]

    def _build(self, element: ElementRef) -> Bounds | None:
        path = self.paths.get(element.model)
        if path is None:
            return None
        model = self.files.get(element.model)
        if model is None:
            model = self.files[element.model] = ifcopenshell.open(str(path))
        try:
            shape = ifcopenshell.geom.create_shape(self.settings, model.by_guid(element.global_id))
        except (RuntimeError, ValueError):  # no such element, or no body to build
            return None
        verts = shape.geometry.verts
        if not verts:
            return None
        xs, ys, zs = verts[0::3], verts[1::3], verts[2::3]
        return Bounds((min(xs), min(ys), min(zs)), (max(xs), max(ys), max(zs)))


def _snapshot(elements: list[ElementRef], paths: dict[str, Path], max_px: int) -> bytes | None:
    """The product's 3D image of the elements, from the model holding the first of them that can be drawn."""
    from ifc_host.render import RenderError, render_view

    for model_name in dict.fromkeys(e.model for e in elements):
        path = paths.get(model_name)
        ids = [e.step_id for e in elements if e.model == model_name and e.step_id is not None]
        if path is None or not ids:
            continue
        try:
            return render_view(str(path), "3D", ids, max_px, timeout_s=120).png
        except RenderError:
            continue
    return None
