"""Cheap stand-ins for the bodies a view had no time to build, from the element's other representations, after a
coarser body of its own (render_simplified.py), in this order: its own ``Box`` (an ``IfcBoundingBox``, which some exporters, ArchiCAD among them, write beside the body)
drawn as a box, no geometry kernel; for a window or a door, the opening it fills when that opening is a plain
extrusion (a window of Revit's BasicHouse has 87 000 faces, over a second to build; its opening, the window's
place through the wall's thickness, is a prism built in milliseconds), drawn and counted as a box; its
``FootPrint`` curves (ArchiCAD's spaces) drawn as the flat area they enclose; the ``Axis`` of a wall, beam, column
or member (Revit's and ArchiCAD's walls) drawn as a thin bar along it. Curves are read by IfcOpenShell's geometry
(a wire, no solid to build: milliseconds per element).

A stand-in is drawn, but it is not the body: the view counts these apart ("N drawn as boxes", "N drawn as their
footprint or axis") so the person and the model know which parts of the image are approximate. In a plan a
footprint or an axis lies at the element's base, below the cut, so it is drawn as an outline."""
from __future__ import annotations

import ifcopenshell
import ifcopenshell.geom
import numpy as np
import shapely

from ifc_host.render_scene import Mesh, PlacementFrames

_CORNERS = np.array([[x, y, z] for z in (0, 1) for y in (0, 1) for x in (0, 1)], dtype=float)
# Twelve triangles of the unit cube over _CORNERS (bottom, top, then the four sides), outward.
_FACES = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
                   [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]], dtype=np.int64)
AXIS_BAR_M = 0.05  # the side of the square bar drawn along an axis
AXIS_CLASSES = ("IfcWall", "IfcBeam", "IfcColumn", "IfcMember")  # their Axis is where the body runs
_MIN_LENGTH_M = 1e-6


def box_stand_ins(model: ifcopenshell.file, elements: list[ifcopenshell.entity_instance]) -> dict[int, Mesh]:
    """World-coordinate box meshes of the elements that carry a ``Box`` representation (the others are absent)."""
    frames = PlacementFrames(model)
    boxes: dict[int, Mesh] = {}
    for element in elements:
        box = _bounding_box(element)
        placement = frames.of(element) if box is not None else None
        if box is None or placement is None:
            continue
        corner = np.array(box.Corner.Coordinates, dtype=float) * frames.unit_scale
        size = np.array([box.XDim, box.YDim, box.ZDim], dtype=float) * frames.unit_scale
        if not np.all(np.isfinite(size)) or not np.all(size > 0):
            continue
        local = corner + _CORNERS * size
        world = local @ placement[:3, :3].T + placement[:3, 3]
        boxes[element.id()] = Mesh(element.id(), element.is_a(), world, _FACES.copy(),
                                   np.full(len(_FACES), box.id(), dtype=np.int32))
    return boxes


def opening_stand_ins(model: ifcopenshell.file, elements: list[ifcopenshell.entity_instance]) -> dict[int, Mesh]:
    """World-coordinate meshes of the openings the elements fill, each an extrusion (a window's or a door's
    bounding prism in its wall); elements that fill none, or an opening of another shape, are absent."""
    settings = ifcopenshell.geom.settings()
    settings.set("use-world-coords", True)
    settings.set("no-normals", True)
    found: dict[int, Mesh] = {}
    for element in elements:
        opening = _filled_extrusion(element)
        if opening is None:
            continue
        try:
            shape = ifcopenshell.geom.create_shape(settings, opening)
        except Exception:  # the kernel could not build the opening: no stand-in from it
            continue
        verts = np.frombuffer(shape.geometry.verts_buffer, dtype=np.float64).reshape(-1, 3)
        faces = np.frombuffer(shape.geometry.faces_buffer, dtype=np.int32).reshape(-1, 3).astype(np.int64)
        if len(faces) and np.isfinite(verts).all():
            found[element.id()] = Mesh(element.id(), element.is_a(), verts.copy(), faces,
                                       np.full(len(faces), opening.id(), dtype=np.int32))
    return found


def _filled_extrusion(element: ifcopenshell.entity_instance) -> ifcopenshell.entity_instance | None:
    """The one opening element the element fills, when its body is nothing but extruded areas."""
    fills = getattr(element, "FillsVoids", None) or ()
    if len(fills) != 1:
        return None
    opening = fills[0].RelatingOpeningElement
    representation = _representation(opening, "Body")
    items = list(representation.Items or ()) if representation is not None else []
    while items and len(items) == 1 and items[0].is_a("IfcMappedItem"):
        items = list(items[0].MappingSource.MappedRepresentation.Items or ())
    if not items or not all(item.is_a("IfcExtrudedAreaSolid") for item in items):
        return None
    return opening


def footprint_stand_ins(model: ifcopenshell.file, elements: list[ifcopenshell.entity_instance]) -> dict[int, Mesh]:
    """World-coordinate flat meshes of the areas the elements' ``FootPrint`` curves enclose (curves that enclose
    nothing are drawn as thin bars along them); elements without one are absent."""
    frames = PlacementFrames(model)
    found: dict[int, Mesh] = {}
    for element in elements:
        representation = _representation(element, "FootPrint")
        placement = frames.of(element) if representation is not None else None
        segments = _curve_segments(representation) if placement is not None else None
        if segments is None or placement is None:
            continue
        local = _flat_area(segments) or _bars(segments)
        if local is not None:
            found[element.id()] = _placed(element, representation, *local, placement)
    return found


def axis_stand_ins(model: ifcopenshell.file, elements: list[ifcopenshell.entity_instance]) -> dict[int, Mesh]:
    """World-coordinate thin bars along the ``Axis`` of the walls, beams, columns and members among the elements
    (the others, and those without an axis, are absent)."""
    frames = PlacementFrames(model)
    found: dict[int, Mesh] = {}
    for element in elements:
        if not any(element.is_a(name) for name in AXIS_CLASSES):
            continue
        representation = _representation(element, "Axis")
        placement = frames.of(element) if representation is not None else None
        segments = _curve_segments(representation) if placement is not None else None
        local = _bars(segments) if segments is not None else None
        if local is not None and placement is not None:
            found[element.id()] = _placed(element, representation, *local, placement)
    return found


def _placed(element: ifcopenshell.entity_instance, representation: ifcopenshell.entity_instance, verts: np.ndarray,
            faces: np.ndarray, placement: np.ndarray) -> Mesh:
    world = verts @ placement[:3, :3].T + placement[:3, 3]
    return Mesh(element.id(), element.is_a(), world, faces, np.full(len(faces), representation.id(), dtype=np.int32))


def _bounding_box(element: ifcopenshell.entity_instance) -> ifcopenshell.entity_instance | None:
    representation = _representation(element, "Box")
    for item in (representation.Items or ()) if representation is not None else ():
        if item.is_a("IfcBoundingBox") and len(item.Corner.Coordinates) == 3:
            return item
    return None


def _representation(element: ifcopenshell.entity_instance, identifier: str) -> ifcopenshell.entity_instance | None:
    shape = getattr(element, "Representation", None)
    for representation in (shape.Representations or ()) if shape is not None else ():
        if representation.RepresentationIdentifier == identifier and representation.Items:
            return representation
    return None


def curve_wire(curves: ifcopenshell.entity_instance) -> tuple[np.ndarray, np.ndarray] | None:
    """Vertices (metres) and edges of a curve or a representation of curves, by IfcOpenShell's geometry (a wire,
    no solid built); None when the kernel cannot read them or yields no finite edge."""
    settings = ifcopenshell.geom.settings()
    settings.set("dimensionality", ifcopenshell.ifcopenshell_wrapper.CURVES)
    try:
        shape = ifcopenshell.geom.create_shape(settings, curves)
    except Exception:  # the kernel could not read these curves
        return None
    verts = np.frombuffer(shape.verts_buffer, dtype=np.float64).reshape(-1, 3)
    edges = np.frombuffer(shape.edges_buffer, dtype=np.int32).reshape(-1, 2)
    if not len(edges) or not np.isfinite(verts).all():
        return None
    return verts, edges


def _curve_segments(representation: ifcopenshell.entity_instance) -> np.ndarray | None:
    """The representation's curves as (n, 2, 3) line segments in the element's coordinates (metres), by
    IfcOpenShell's geometry (arcs come as polylines); None when it yields none."""
    wire = curve_wire(representation)
    if wire is None:
        return None
    verts, edges = wire
    segments = verts[edges]
    segments = segments[np.linalg.norm(segments[:, 1] - segments[:, 0], axis=1) > _MIN_LENGTH_M]
    return segments if len(segments) else None


def _flat_area(segments: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Triangles of the area the segments enclose, at their mean height (None when they enclose nothing)."""
    area = shapely.union_all(list(shapely.get_parts(shapely.polygonize(shapely.linestrings(segments[:, :, :2])))))
    if area.is_empty or area.area <= 0:
        return None
    triangles = [t for t in shapely.get_parts(shapely.constrained_delaunay_triangles(area)) if t.area > 0]
    if not triangles:
        return None
    corners = np.array([t.exterior.coords[:3] for t in triangles], dtype=float).reshape(-1, 2)
    verts = np.column_stack([corners, np.full(len(corners), float(segments[:, :, 2].mean()))])
    faces = np.arange(len(verts), dtype=np.int64).reshape(-1, 3)
    return verts, faces


def _bars(segments: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """A square bar of side AXIS_BAR_M centred on each segment: eight corners and twelve triangles each."""
    verts: list[np.ndarray] = []
    faces: list[np.ndarray] = []
    for start, end in segments:
        along = end - start
        direction = along / np.linalg.norm(along)
        helper = np.array([0.0, 0.0, 1.0]) if abs(direction[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
        across = np.cross(direction, helper)
        across /= np.linalg.norm(across)
        up = np.cross(direction, across)
        half = AXIS_BAR_M / 2
        corners = (start + _CORNERS[:, :1] * along + (2 * _CORNERS[:, 1:2] - 1) * half * across
                   + (2 * _CORNERS[:, 2:3] - 1) * half * up)
        faces.append(_FACES + 8 * len(verts))
        verts.append(corners)
    if not verts:
        return None
    return np.concatenate(verts), np.concatenate(faces)
