"""What a view shows: storeys as views (by Name or ``#<step id>``), the elements each one holds, meshes.

Runs inside the render child process only (IfcOpenShell geometry can abort the process).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import ifcopenshell
import ifcopenshell.util.placement
import ifcopenshell.util.unit
import numpy as np

from ifc_host.model_file import BadModelError, open_checked
from ifc_host.render_drafts import restate_drafts
from ifc_host.spatial import elements_of_storey as elements_of_storey  # the views import it from here
from ifc_host.spatial import storey_ids, storey_labels

AXONOMETRIC_VIEW = "3D"
AXONOMETRIC_STOREY_PREFIX = "3D:"
# Orthographic views of the whole model from each side (project north is +y), for reviewing facades.
ELEVATION_VIEWS = {f"{side.capitalize()} elevation": side for side in ("north", "east", "south", "west")}
# The whole model seen from straight above, for models that storeys do not describe (a road or railway
# along its alignment, a facility without storeys): offered when there are no storeys or there is an alignment.
SITE_PLAN_VIEW = "Site plan"
PLAN_CUT_HEIGHT_M = 1.2


class ViewError(ValueError):
    """The request names no view this model has (message lists the views it does have)."""


@dataclass(frozen=True)
class ViewSpec:
    name: str
    kind: Literal["plan", "axonometric", "elevation"]
    storey: ifcopenshell.entity_instance | None
    elevation_m: float = 0.0
    title_name: str = ""  # the name shown on the image (a duplicate Name with its step id)
    facing: str = ""  # for an elevation: the side it is seen from (north, east, south, west; above: the site plan)

    @property
    def shown_name(self) -> str:
        return self.title_name or self.name

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


@dataclass(frozen=True)
class Drawing:
    png: bytes
    width: int
    height: int
    undrawn: list[int]  # elements of the view that have a body no geometry kernel could build (or no time)
    out_of_time: list[int] = field(default_factory=list)  # the undrawn ones the budget did not reach
    boxed: list[int] = field(default_factory=list)  # out of time, drawn as their Box (or the opening they fill)
    sketched: list[int] = field(default_factory=list)  # out of time, drawn from their FootPrint or Axis instead
    later: list[int] = field(default_factory=list)  # not drawn as their body: a background build is making it
    simplified: list[int] = field(default_factory=list)  # out of time, drawn as a coarser body of theirs


def open_model(path: str) -> ifcopenshell.file:
    """The model as the host opens it (an IFC 4.3 draft header read as the schema IfcOpenShell has, and so on), its
    draft geometry restated in the final schema's terms (render_drafts.py: this copy is never written)."""
    try:
        model = open_checked(path)
    except BadModelError as exc:
        raise ViewError(f"cannot read the model: {exc}") from exc
    restate_drafts(model)
    return model


def storeys_by_elevation(model: ifcopenshell.file) -> list[ifcopenshell.entity_instance]:
    storeys = model.by_type("IfcBuildingStorey")
    return sorted(storeys, key=lambda s: (_elevation_m(model, s), s.id()))


def resolve_view(model: ifcopenshell.file, view: str | None, element_ids: Iterable[int]) -> ViewSpec:
    """Turn the requested view name into a plan of a storey or an axonometric (see render.py's docstring).

    A storey is named by its Name, or by ``#<step id>`` (always; the only way for an unnamed storey or one
    whose Name another storey shares), exactly as ``view_names`` lists them.
    """
    storeys = storeys_by_elevation(model)
    if view is None or not view.strip():
        holding = set(storey_ids(model, element_ids).values())
        for storey in storeys:
            if storey.id() in holding:
                return _plan(model, storey, storeys)
        if storeys:
            return _plan(model, storeys[0], storeys)
        if _has_alignment(model):  # a road or railway: its plan along the alignment
            return ViewSpec(SITE_PLAN_VIEW, "elevation", None, facing="above")
        return ViewSpec(AXONOMETRIC_VIEW, "axonometric", None)

    requested = view.strip()
    if requested.casefold() in (AXONOMETRIC_VIEW.casefold(), "axonometric"):
        return ViewSpec(AXONOMETRIC_VIEW, "axonometric", None)
    axonometric = requested.casefold().startswith(AXONOMETRIC_STOREY_PREFIX.casefold())
    storey_name = requested[len(AXONOMETRIC_STOREY_PREFIX):].strip() if axonometric else requested
    storey = _storey_named(storeys, storey_name)
    if storey is not None:
        plan = _plan(model, storey, storeys)
        if not axonometric:
            return plan
        return ViewSpec(f"{AXONOMETRIC_STOREY_PREFIX} {plan.name}", "axonometric", storey, plan.elevation_m,
                        f"{AXONOMETRIC_STOREY_PREFIX} {plan.title_name}")
    if requested.casefold() == SITE_PLAN_VIEW.casefold() and has_site_plan(model):
        return ViewSpec(SITE_PLAN_VIEW, "elevation", None, facing="above")
    elevation = next((name for name in ELEVATION_VIEWS if name.casefold() == requested.casefold()), None)
    if elevation is not None:
        return ViewSpec(elevation, "elevation", None, facing=ELEVATION_VIEWS[elevation])
    raise ViewError(f"no storey named {storey_name!r}; views: {', '.join(view_names(model))} "
                    f"(or '{AXONOMETRIC_STOREY_PREFIX} <storey>' for one storey in 3D)")


def view_names(model: ifcopenshell.file) -> list[str]:
    """Every view this model has, lowest storey first: storey plans, the site plan (models without storeys or
    with an alignment), ``3D``, then the four elevations."""
    storeys = storeys_by_elevation(model)
    site = [SITE_PLAN_VIEW] if has_site_plan(model, storeys) else []
    labels = storey_labels(model)
    return [*(labels[s.id()] for s in storeys), *site, AXONOMETRIC_VIEW, *ELEVATION_VIEWS]


def has_site_plan(model: ifcopenshell.file, storeys: list[ifcopenshell.entity_instance] | None = None) -> bool:
    """Whether storeys leave the model undescribed: none at all, or an alignment (infrastructure) beside them."""
    if not (storeys if storeys is not None else model.by_type("IfcBuildingStorey")):
        return True
    return _has_alignment(model)


def _has_alignment(model: ifcopenshell.file) -> bool:
    try:
        return bool(model.by_type("IfcAlignment"))
    except RuntimeError:  # IFC2X3 has no IfcAlignment
        return False


def storey_label(storey: ifcopenshell.entity_instance, storeys: list[ifcopenshell.entity_instance]) -> str:
    """The storey's Name when it names this storey alone, else ``#<step id>`` (spatial.storey_labels)."""
    return storey_labels(storey.file)[storey.id()]


def all_elements(model: ifcopenshell.file) -> list[ifcopenshell.entity_instance]:
    return [e for e in model.by_type("IfcElement") if not e.is_a("IfcFeatureElement")]


def metres_per_unit(model: ifcopenshell.file) -> float:
    return float(ifcopenshell.util.unit.calculate_unit_scale(model))


class PlacementFrames:
    """World matrices of object placements (translation in metres), memoised along the placement chains. An
    ``IfcLinearPlacement`` (IFC 4.3: a sleeper or a signal at a distance along an alignment) is read from its
    ``CartesianPosition``, the Cartesian equivalent exporters may write beside it; without one it has no frame here
    (IfcOpenShell's geometry evaluates one in about 3.5 ms, 32 s for a railway's 9,238 sleepers: more than
    building them, which its iterator does in 0.25 ms each)."""

    def __init__(self, model: ifcopenshell.file) -> None:
        self.unit_scale = metres_per_unit(model)
        self._cache: dict[int, np.ndarray] = {}

    def of(self, element: ifcopenshell.entity_instance) -> np.ndarray | None:
        return self.of_placement(element.ObjectPlacement)

    def of_placement(self, placement: ifcopenshell.entity_instance | None) -> np.ndarray | None:
        matrix = self._world(placement) if placement is not None else None
        if matrix is None:
            return None
        matrix = matrix.copy()
        matrix[:3, 3] *= self.unit_scale
        return matrix

    def _world(self, placement: ifcopenshell.entity_instance) -> np.ndarray | None:
        """The placement's world matrix in the file's units; None for a placement of another kind (a grid's)."""
        cached = self._cache.get(placement.id())
        if cached is not None:
            return cached
        linear = placement.is_a() == "IfcLinearPlacement"
        if linear and placement.CartesianPosition is None or not linear and not placement.is_a("IfcLocalPlacement"):
            return None
        local = np.array(ifcopenshell.util.placement.get_axis2placement(
            placement.CartesianPosition if linear else placement.RelativePlacement), dtype=float)
        parent = placement.PlacementRelTo
        base = self._world(parent) if parent is not None else np.eye(4)
        if base is None:
            return None
        matrix = base @ local
        self._cache[placement.id()] = matrix
        return matrix


def _plan(model: ifcopenshell.file, storey: ifcopenshell.entity_instance,
          storeys: list[ifcopenshell.entity_instance]) -> ViewSpec:
    name = storey_label(storey, storeys)
    own = (storey.Name or "").strip()
    title = name if name == own or not own else f"{own} ({name})"
    return ViewSpec(name, "plan", storey, _elevation_m(model, storey), title)


def _storey_named(storeys: list[ifcopenshell.entity_instance], name: str) -> ifcopenshell.entity_instance | None:
    """The storey with this step id (``#38``) or Name (exact, then ignoring case); ViewError if ambiguous."""
    if name.startswith("#") and name[1:].strip().isdigit():
        step_id = int(name[1:].strip())
        return next((s for s in storeys if s.id() == step_id), None)
    for matches in ([s for s in storeys if (s.Name or "").strip() == name],
                    [s for s in storeys if (s.Name or "").strip().casefold() == name.casefold()]):
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            ids = ", ".join(f"#{s.id()}" for s in matches)
            raise ViewError(f"{len(matches)} storeys are named {name!r}; name one by its step id: {ids}")
    return None


def _elevation_m(model: ifcopenshell.file, storey: ifcopenshell.entity_instance) -> float:
    frame = PlacementFrames(model).of(storey)
    if frame is not None:
        return float(frame[2, 3])
    return float(storey.Elevation or 0.0) * metres_per_unit(model)
