"""Stand-ins for solids swept along an alignment (``IfcSectionedSolidHorizontal``: a railway's rails, a road's
layers), drawn when a view has no time to build them.

The manifold kernel builds no sectioned solid, so each is built by OpenCascade on its own (about 33 ms a rail
along a gradient curve, 476 rails in a railway). The stand-in is the bounding rectangle of the solid's cross
sections swept along its directrix between its first and last cross-section positions, at their lateral and
vertical offsets: the place and size of a rail, not its profile. The directrix is evaluated once by IfcOpenShell's
geometry (a polyline, milliseconds) and shared by every solid along it; distances along it are measured in plan,
as ``IfcPointByDistanceExpression`` measures them along an ``IfcGradientCurve``. Counted with the boxes."""
from __future__ import annotations

import time

import ifcopenshell
import ifcopenshell.geom
import numpy as np

from ifc_host.render_scene import Mesh, PlacementFrames
from ifc_host.render_simplified import body_representations
from ifc_host.render_stand_ins import curve_wire

_SWEPT = "IfcSectionedSolidHorizontal"


def swept_stand_ins(model: ifcopenshell.file, elements: list[ifcopenshell.entity_instance],
                    until: float | None = None) -> dict[int, Mesh]:
    """World-coordinate meshes of the elements whose body is sectioned solids along a curve (others absent); none
    made once the wall clock passes ``until``."""
    frames = PlacementFrames(model)
    curves: dict[int, tuple[np.ndarray, np.ndarray] | None] = {}  # by directrix: its points and distances along
    profiles: dict[int, np.ndarray | None] = {}  # by profile: its bounding rectangle (min x, min y, max x, max y)
    found: dict[int, Mesh] = {}
    for element in elements:
        if until is not None and time.time() >= until:
            break
        solids = _swept_solids(element)
        placement = frames.of(element) if solids else None
        if placement is None:
            continue
        parts = [_sweep(solid, curves, profiles, frames.unit_scale) for solid in solids]
        if any(part is None for part in parts):
            continue
        verts, faces, offset = [], [], 0
        for part in parts:
            assert part is not None
            verts.append(part[0])
            faces.append(part[1] + offset)
            offset += len(part[0])
        world = np.concatenate(verts) @ placement[:3, :3].T + placement[:3, 3]
        triangles = np.concatenate(faces)
        found[element.id()] = Mesh(element.id(), element.is_a(), world, triangles,
                                   np.full(len(triangles), solids[0].id(), dtype=np.int32))
    return found


def _swept_solids(element: ifcopenshell.entity_instance) -> list[ifcopenshell.entity_instance]:
    """The body's items when every one of them is a sectioned solid along a curve; else none."""
    items = [item for representation in body_representations(element)[0] for item in representation.Items or ()]
    if not items or not all(item.is_a(_SWEPT) for item in items):
        return []
    return items


def _sweep(solid: ifcopenshell.entity_instance, curves: dict[int, tuple[np.ndarray, np.ndarray] | None],
           profiles: dict[int, np.ndarray | None], unit_scale: float) -> tuple[np.ndarray, np.ndarray] | None:
    directrix = solid.Directrix
    if directrix.id() not in curves:
        curves[directrix.id()] = _polyline(directrix)
    curve = curves[directrix.id()]
    rectangles = []
    for profile in solid.CrossSections:
        if profile.id() not in profiles:
            profiles[profile.id()] = _rectangle(profile)
        rectangles.append(profiles[profile.id()])
    stations = [_station(position, unit_scale) for position in solid.CrossSectionPositions]
    if curve is None or any(r is None for r in rectangles) or any(s is None for s in stations) or len(stations) < 2:
        return None
    low = np.min([r[:2] for r in rectangles if r is not None], axis=0)
    high = np.max([r[2:] for r in rectangles if r is not None], axis=0)
    along = np.array([s[0] for s in stations if s is not None])
    points, distances = curve
    inside = (distances > along.min()) & (distances < along.max())
    ends = [_at(points, distances, d) for d in (along.min(), along.max())]
    path = np.concatenate([ends[0][None], points[inside], ends[1][None]])
    at = np.concatenate([[along.min()], distances[inside], [along.max()]])
    distinct = np.concatenate([[True], np.linalg.norm(np.diff(path[:, :2], axis=0), axis=1) > 1e-9])
    path, at = path[distinct], at[distinct]  # a position past the curve's end is at its end
    lateral = np.interp(at, along, [s[1] for s in stations if s is not None])
    vertical = np.interp(at, along, [s[2] for s in stations if s is not None])
    return _prism(path, lateral, vertical, low, high)


def _polyline(curve: ifcopenshell.entity_instance) -> tuple[np.ndarray, np.ndarray] | None:
    """The curve's points (metres) in order, and each one's distance along it in plan; None when unreadable."""
    wire = curve_wire(curve)
    if wire is None:
        return None
    verts, edges = wire
    if not (edges[1:, 0] == edges[:-1, 1]).all():  # not one chain of edges
        return None
    points = verts[np.concatenate([edges[:, 0], edges[-1:, 1]])]
    steps = np.linalg.norm(np.diff(points[:, :2], axis=0), axis=1)
    return points, np.concatenate([[0.0], np.cumsum(steps)])


def _rectangle(profile: ifcopenshell.entity_instance) -> np.ndarray | None:
    """The profile's bounding rectangle in its own plane (metres), as IfcOpenShell's geometry builds it."""
    try:
        shape = ifcopenshell.geom.create_shape(ifcopenshell.geom.settings(), profile)
    except Exception:  # the kernel could not build the profile: no stand-in from it
        return None
    verts = np.frombuffer(shape.verts_buffer, dtype=np.float64).reshape(-1, 3)
    if not len(verts) or not np.isfinite(verts).all():
        return None
    return np.concatenate([verts[:, :2].min(axis=0), verts[:, :2].max(axis=0)])


def _station(position: ifcopenshell.entity_instance, unit_scale: float) -> tuple[float, float, float] | None:
    """Distance along, lateral and vertical offsets (metres) of a cross-section's position."""
    location = getattr(position, "Location", None)
    if location is None or not location.is_a("IfcPointByDistanceExpression"):
        return None
    distance = location.DistanceAlong
    value = distance.wrappedValue if hasattr(distance, "wrappedValue") else distance
    return (float(value) * unit_scale, float(location.OffsetLateral or 0.0) * unit_scale,
            float(location.OffsetVertical or 0.0) * unit_scale)


def _at(points: np.ndarray, distances: np.ndarray, distance: float) -> np.ndarray:
    return np.array([np.interp(distance, distances, points[:, axis]) for axis in range(3)])


def _prism(path: np.ndarray, lateral: np.ndarray, vertical: np.ndarray, low: np.ndarray,
           high: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The rectangle [low, high] (x across to the left, y up) swept along the path: four corners a point."""
    tangents = np.gradient(path[:, :2], axis=0)
    lengths = np.linalg.norm(tangents, axis=1)
    if len(path) < 2 or not (lengths > 0).all():
        return None
    tangents /= lengths[:, None]
    left = np.column_stack([-tangents[:, 1], tangents[:, 0], np.zeros(len(path))])
    up = np.array([0.0, 0.0, 1.0])
    corners = [(low[0], low[1]), (high[0], low[1]), (high[0], high[1]), (low[0], high[1])]
    rings = np.stack([path + left * (lateral + x)[:, None] + up * (vertical + y)[:, None] for x, y in corners], axis=1)
    verts = rings.reshape(-1, 3)
    faces = []
    for i in range(len(path) - 1):
        for k in range(4):
            a, b = 4 * i + k, 4 * i + (k + 1) % 4
            faces += [[a, b, b + 4], [a, b + 4, a + 4]]
    last = 4 * (len(path) - 1)
    faces += [[0, 2, 1], [0, 3, 2], [last, last + 1, last + 2], [last, last + 2, last + 3]]
    return verts, np.array(faces, dtype=np.int64)
