"""An element's simplified body: a cheaper body-like representation of the same element, the first stand-in tried.

Files may carry, beside an element's body, a coarser one: a representation identified ``Body-FallBack`` (the IFC4
Reference View's triangulated fall-back), or another ``Body`` in a geometric representation subcontext that is
coarser than the body's own, by its ``TargetView`` (``SKETCH_VIEW``: a simplified, schematic shape;
``GRAPH_VIEW``: an abstract one) or by a smaller ``TargetScale`` (a 1:200 level of detail beside a 1:50 one).

IfcOpenShell's iterator builds every body-like representation of an element it is given, the coarse ones too,
each as a shape of the same element; ``coarse_representation_ids`` names the coarse ones so the view keeps the
element's real body. When the real body does not fit the view's budget, ``simplified_bodies`` draws the coarse one
instead, chosen by its estimated cost (faces read from the entity graph, no kernel): the most detailed one whose
estimated time fits what is left of the budget, else the cheapest; never one costlier than the body itself or
than the caller's ceiling (render_bodies.COSTLY_FACES: a costlier one would be no simpler). It is built by
IfcOpenShell's geometry in the representation's coordinates and placed at the element (a type's mapped fall-back
is built once and placed per instance). Like every stand-in it is counted apart and never kept as the element's
body."""
from __future__ import annotations

import time
from collections.abc import Iterable

import ifcopenshell
import ifcopenshell.geom
import ifcopenshell.util.placement
import numpy as np

from ifc_host.render_scene import Mesh, PlacementFrames

BODY_IDENTIFIERS = ("Body", "Facetation")
FALLBACK_IDENTIFIER = "Body-FallBack"
COARSE_VIEWS = ("SKETCH_VIEW", "GRAPH_VIEW")
_ITEM_FACES = 6  # what an item that is not faceted (an extrusion, a CSG primitive) costs, in faces


def body_representations(element: ifcopenshell.entity_instance) -> tuple[list[ifcopenshell.entity_instance],
                                                                         list[ifcopenshell.entity_instance]]:
    """The element's body representations (the ones a view draws as the element), and its coarser ones."""
    shape = getattr(element, "Representation", None)
    bodies: list[ifcopenshell.entity_instance] = []
    fallbacks: list[ifcopenshell.entity_instance] = []
    for representation in (shape.Representations or ()) if shape is not None else ():
        identifier = representation.RepresentationIdentifier
        if identifier in BODY_IDENTIFIERS and representation.Items:
            bodies.append(representation)
        elif identifier == FALLBACK_IDENTIFIER and representation.Items:
            fallbacks.append(representation)
    if len(bodies) < 2 and not fallbacks:  # nearly every element: one body, nothing coarser (its context unread)
        return bodies, []
    sketches = [r for r in bodies if _target_view(r) in COARSE_VIEWS]
    fine = [r for r in bodies if r not in sketches]
    if not fine:  # only coarse bodies: they are the element's body (a Body-FallBack alone is no body)
        return sketches, []
    scales = {r.id(): _target_scale(r) for r in fine}
    finest = max(scales.values())
    return ([r for r in fine if scales[r.id()] >= finest],
            fallbacks + sketches + [r for r in fine if scales[r.id()] < finest])


def coarse_representation_ids(elements: Iterable[ifcopenshell.entity_instance]) -> set[int]:
    """Ids of the coarse representations of these elements and of those they map: shapes the iterator makes of
    them are not the elements' bodies."""
    ids: set[int] = set()
    for element in elements:
        stack = list(body_representations(element)[1])
        while stack:
            representation = stack.pop()
            ids.add(representation.id())
            stack.extend(item.MappingSource.MappedRepresentation for item in representation.Items or ()
                         if item.is_a("IfcMappedItem"))
    return ids


def face_count(items: Iterable[ifcopenshell.entity_instance]) -> int:
    """Faces of the faceted items (through mapped items): what the kernel's time grows with."""
    return _count(items, 0)


def representation_cost(representation: ifcopenshell.entity_instance) -> int:
    """A representation's estimated cost in faces: its faceted faces, and a few for every other item."""
    return _count(representation.Items or (), _ITEM_FACES)


def simplified_bodies(model: ifcopenshell.file, elements: list[ifcopenshell.entity_instance], max_faces: int,
                      room_faces: float | None, until: float | None = None) -> dict[int, Mesh]:
    """World-coordinate meshes of the elements that carry a coarser body than their own (the others are absent):
    none of more than ``max_faces`` faces; ``room_faces``, the faces the time left can build (None: no limit);
    none built once the wall clock passes ``until``."""
    frames = PlacementFrames(model)
    built: dict[int, tuple[np.ndarray, np.ndarray] | None] = {}  # by the representation built
    found: dict[int, Mesh] = {}
    for element in elements:
        if until is not None and time.time() >= until:
            break
        bodies, coarse = body_representations(element)
        placement = frames.of(element) if coarse else None
        if placement is None:
            continue
        ceiling = min(max_faces, sum(representation_cost(r) for r in bodies) - 1)
        choice = _cheap_enough(coarse, ceiling, room_faces)
        if choice is None:
            continue
        source, mapping = _mapped(choice, frames.unit_scale)
        if source.id() not in built:
            built[source.id()] = _build(source)
        arrays = built[source.id()]
        if arrays is None:
            continue
        matrix = placement @ mapping
        found[element.id()] = Mesh(element.id(), element.is_a(), arrays[0] @ matrix[:3, :3].T + matrix[:3, 3],
                                   arrays[1], np.full(len(arrays[1]), choice.id(), dtype=np.int32))
    return found


def _cheap_enough(coarse: list[ifcopenshell.entity_instance], ceiling: int,
                  room_faces: float | None) -> ifcopenshell.entity_instance | None:
    """The most detailed coarse representation that fits in ``room_faces`` (None: the most detailed), else the
    cheapest; none costlier than ``ceiling`` faces."""
    costs = sorted(((representation_cost(r), r.id(), r) for r in coarse), key=lambda c: (c[0], c[1]))
    costs = [c for c in costs if c[0] <= ceiling]
    if not costs:
        return None
    fitting = [c for c in costs if room_faces is None or c[0] <= room_faces]
    return (fitting or costs[:1])[-1][2]


def _mapped(representation: ifcopenshell.entity_instance,
            unit_scale: float) -> tuple[ifcopenshell.entity_instance, np.ndarray]:
    """The representation to build, and the matrix (metres) from its coordinates to the element's: the mapped
    representation of a representation that is one IfcMappedItem (a type's, shared by its instances)."""
    items = representation.Items or ()
    if len(items) != 1 or not items[0].is_a("IfcMappedItem"):
        return representation, np.eye(4)
    item = items[0]
    if not item.MappingTarget.is_a("IfcCartesianTransformationOperator3D"):
        return representation, np.eye(4)
    mapping = np.array(ifcopenshell.util.placement.get_mappeditem_transformation(item), dtype=float)
    mapping[:3, 3] *= unit_scale
    return item.MappingSource.MappedRepresentation, mapping


def _build(representation: ifcopenshell.entity_instance) -> tuple[np.ndarray, np.ndarray] | None:
    """Vertices (metres, the representation's coordinates) and triangles, by IfcOpenShell's geometry."""
    settings = ifcopenshell.geom.settings()
    settings.set("no-normals", True)
    try:
        shape = ifcopenshell.geom.create_shape(settings, representation)
    except Exception:  # the kernel could not build it: no simplified body from it
        return None
    verts = np.frombuffer(shape.verts_buffer, dtype=np.float64).reshape(-1, 3)
    faces = np.frombuffer(shape.faces_buffer, dtype=np.int32).reshape(-1, 3)
    if not len(faces) or not np.isfinite(verts).all():
        return None
    return verts.copy(), faces.astype(np.int64)


def _target_view(representation: ifcopenshell.entity_instance) -> str | None:
    context = representation.ContextOfItems
    return context.TargetView if context is not None and context.is_a("IfcGeometricRepresentationSubContext") \
        else None


def _target_scale(representation: ifcopenshell.entity_instance) -> float:
    """The scale the representation's subcontext is meant for (1:50 is 0.02); none said: the finest."""
    context = representation.ContextOfItems
    scale = context.TargetScale if context is not None and context.is_a("IfcGeometricRepresentationSubContext") \
        else None
    return float(scale) if scale else float("inf")


def _count(items: Iterable[ifcopenshell.entity_instance], other: int) -> int:
    stack = list(items)
    count = seen = 0
    while stack and seen < 64:
        item, seen = stack.pop(), seen + 1
        if item.is_a("IfcMappedItem"):
            stack.extend(item.MappingSource.MappedRepresentation.Items or ())
        elif item.is_a("IfcFaceBasedSurfaceModel"):
            count += sum(len(faces.CfsFaces) for faces in item.FbsmFaces)
        elif item.is_a("IfcShellBasedSurfaceModel"):
            count += sum(len(shell.CfsFaces) for shell in item.SbsmBoundary)
        elif item.is_a("IfcManifoldSolidBrep"):
            count += len(item.Outer.CfsFaces) + sum(len(void.CfsFaces) for void in getattr(item, "Voids", None) or ())
        elif item.is_a("IfcTessellatedFaceSet"):
            count += len(item.Faces) if item.is_a("IfcPolygonalFaceSet") else len(item.CoordIndex)
        else:
            count += other
    return count
