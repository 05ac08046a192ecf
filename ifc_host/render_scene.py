"""What a view shows: storeys as views, the elements each one holds, and their world-space triangle meshes.

Runs inside the render child process only (IfcOpenShell geometry can abort the process).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import ifcopenshell
import ifcopenshell.geom
import ifcopenshell.util.element
import ifcopenshell.util.placement
import ifcopenshell.util.unit
import numpy as np

AXONOMETRIC_VIEW = "3D"
AXONOMETRIC_STOREY_PREFIX = "3D:"
PLAN_CUT_HEIGHT_M = 1.2
# Manifold is about 8x faster than OpenCascade on the sample buildings and good enough for a picture.
GEOMETRY_LIBRARY = "manifold"


class ViewError(ValueError):
    """The request names no view this model has (message lists the views it does have)."""


@dataclass(frozen=True)
class ViewSpec:
    name: str
    kind: Literal["plan", "axonometric"]
    storey: ifcopenshell.entity_instance | None
    elevation_m: float = 0.0

    @property
    def cut_z(self) -> float:
        return self.elevation_m + PLAN_CUT_HEIGHT_M


@dataclass(frozen=True)
class Mesh:
    """One element's body in world coordinates (metres): vertices, triangles, and each triangle's item."""
    element_id: int
    ifc_class: str
    verts: np.ndarray  # (n, 3) float64
    faces: np.ndarray  # (m, 3) int64
    items: np.ndarray  # (m,) representation item each triangle came from

    @property
    def z_range(self) -> tuple[float, float]:
        return float(self.verts[:, 2].min()), float(self.verts[:, 2].max())


def open_model(path: str) -> ifcopenshell.file:
    try:
        return ifcopenshell.open(path)
    except (ifcopenshell.Error, OSError, RuntimeError) as exc:
        raise ViewError(f"cannot read the model: {exc}") from exc


def storeys_by_elevation(model: ifcopenshell.file) -> list[ifcopenshell.entity_instance]:
    storeys = model.by_type("IfcBuildingStorey")
    return sorted(storeys, key=lambda s: (_elevation_m(model, s), s.id()))


def resolve_view(model: ifcopenshell.file, view: str | None, element_ids: Iterable[int]) -> ViewSpec:
    """Turn the requested view name into a plan of a storey or an axonometric (see render.py's docstring)."""
    storeys = storeys_by_elevation(model)
    if view is None or not view.strip():
        wanted = set(element_ids)
        for storey in storeys:
            if any(storey_of(model, element_id) == storey.id() for element_id in wanted):
                return _plan(model, storey)
        return _plan(model, storeys[0]) if storeys else ViewSpec(AXONOMETRIC_VIEW, "axonometric", None)

    requested = view.strip()
    if requested.casefold() in (AXONOMETRIC_VIEW.casefold(), "axonometric"):
        return ViewSpec(AXONOMETRIC_VIEW, "axonometric", None)
    if requested.casefold().startswith(AXONOMETRIC_STOREY_PREFIX.casefold()):
        storey = _storey_named(storeys, requested[len(AXONOMETRIC_STOREY_PREFIX):].strip())
        if storey is not None:
            return ViewSpec(f"{AXONOMETRIC_STOREY_PREFIX} {storey.Name}", "axonometric", storey,
                            _elevation_m(model, storey))
    else:
        storey = _storey_named(storeys, requested)
        if storey is not None:
            return _plan(model, storey)
    names = [s.Name or f"#{s.id()}" for s in storeys] + [AXONOMETRIC_VIEW]
    raise ViewError(f"no storey named {view!r}; views: {', '.join(names)} "
                    f"(or '{AXONOMETRIC_STOREY_PREFIX} <storey>' for one storey in 3D)")


def elements_of_storey(storey: ifcopenshell.entity_instance) -> list[ifcopenshell.entity_instance]:
    """Products contained in or aggregated under the storey (spaces, their contents, assembly parts)."""
    found: dict[int, ifcopenshell.entity_instance] = {}
    stack = [storey]
    while stack:
        parent = stack.pop()
        children: list[ifcopenshell.entity_instance] = []
        for rel in getattr(parent, "ContainsElements", None) or ():
            children.extend(rel.RelatedElements)
        for rel in getattr(parent, "IsDecomposedBy", None) or ():
            children.extend(rel.RelatedObjects)
        for child in children:
            if child.id() in found or child.is_a("IfcBuildingStorey") or not child.is_a("IfcProduct"):
                continue
            found[child.id()] = child
            stack.append(child)
    return [e for e in found.values() if not e.is_a("IfcFeatureElement")]


def all_elements(model: ifcopenshell.file) -> list[ifcopenshell.entity_instance]:
    return [e for e in model.by_type("IfcElement") if not e.is_a("IfcFeatureElement")]


def storey_of(model: ifcopenshell.file, element_id: int) -> int | None:
    """Id of the storey an element belongs to (through containment, aggregation or the wall it voids)."""
    try:
        element = model.by_id(element_id)
    except RuntimeError:
        return None
    for _ in range(16):
        if element is None or not element.is_a("IfcProduct"):
            return None
        if element.is_a("IfcBuildingStorey"):
            return element.id()
        parent = ifcopenshell.util.element.get_container(element, should_get_direct=True)
        if parent is None:
            parent = ifcopenshell.util.element.get_aggregate(element)
        if parent is None and element.is_a("IfcOpeningElement") and element.VoidsElements:
            parent = element.VoidsElements[0].RelatingBuildingElement
        element = parent
    return None


def tessellate(model: ifcopenshell.file, elements: list[ifcopenshell.entity_instance]) -> dict[int, Mesh]:
    """World-coordinate meshes of the elements that have a body (others are simply absent)."""
    if not elements:
        return {}
    settings = ifcopenshell.geom.settings()
    settings.set("use-world-coords", True)
    iterator = ifcopenshell.geom.iterator(settings, model, 1, include=elements, geometry_library=GEOMETRY_LIBRARY)
    meshes: dict[int, Mesh] = {}
    if not iterator.initialize():
        return meshes
    while True:
        shape = iterator.get()
        geometry = shape.geometry
        verts = np.frombuffer(geometry.verts_buffer, dtype=np.float64).reshape(-1, 3)
        faces = np.frombuffer(geometry.faces_buffer, dtype=np.int32).reshape(-1, 3)
        if len(faces):
            items = np.frombuffer(geometry.item_ids_buffer, dtype=np.int32)
            if len(items) != len(faces):
                items = np.zeros(len(faces), dtype=np.int32)
            meshes[shape.id] = Mesh(shape.id, shape.type, verts, faces.astype(np.int64), items)
        if not iterator.next():
            break
    return meshes


def metres_per_unit(model: ifcopenshell.file) -> float:
    return float(ifcopenshell.util.unit.calculate_unit_scale(model))


class PlacementFrames:
    """World matrices of object placements (translation in metres), memoised along the placement chains."""

    def __init__(self, model: ifcopenshell.file) -> None:
        self.unit_scale = metres_per_unit(model)
        self._cache: dict[int, np.ndarray] = {}

    def of(self, element: ifcopenshell.entity_instance) -> np.ndarray | None:
        placement = element.ObjectPlacement
        if placement is None or not placement.is_a("IfcLocalPlacement"):
            return None
        matrix = self._world(placement).copy()
        matrix[:3, 3] *= self.unit_scale
        return matrix

    def _world(self, placement: ifcopenshell.entity_instance) -> np.ndarray:
        cached = self._cache.get(placement.id())
        if cached is not None:
            return cached
        local = np.array(ifcopenshell.util.placement.get_axis2placement(placement.RelativePlacement), dtype=float)
        parent = placement.PlacementRelTo
        matrix = self._world(parent) @ local if parent is not None and parent.is_a("IfcLocalPlacement") else local
        self._cache[placement.id()] = matrix
        return matrix


def _plan(model: ifcopenshell.file, storey: ifcopenshell.entity_instance) -> ViewSpec:
    return ViewSpec(storey.Name or f"#{storey.id()}", "plan", storey, _elevation_m(model, storey))


def _storey_named(storeys: list[ifcopenshell.entity_instance], name: str) -> ifcopenshell.entity_instance | None:
    for storey in storeys:
        if (storey.Name or "") == name:
            return storey
    folded = name.casefold()
    return next((s for s in storeys if (s.Name or "").casefold() == folded), None)


def _elevation_m(model: ifcopenshell.file, storey: ifcopenshell.entity_instance) -> float:
    frame = PlacementFrames(model).of(storey)
    if frame is not None:
        return float(frame[2, 3])
    return float(storey.Elevation or 0.0) * metres_per_unit(model)
