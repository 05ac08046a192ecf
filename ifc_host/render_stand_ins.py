"""Cheap stand-ins for the bodies a view had no time to build: an element's own ``Box`` representation
(an ``IfcBoundingBox``, which some exporters, ArchiCAD among them, write beside the body) drawn as a box, no geometry kernel.

A stand-in is drawn, but it is not the body: the view counts these apart ("N drawn as boxes") so the
person and the model know which parts of the image are approximate."""
from __future__ import annotations

import ifcopenshell
import numpy as np

from ifc_host.render_scene import Mesh, PlacementFrames

_CORNERS = np.array([[x, y, z] for z in (0, 1) for y in (0, 1) for x in (0, 1)], dtype=float)
# Twelve triangles of the unit cube over _CORNERS (bottom, top, then the four sides), outward.
_FACES = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
                   [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]], dtype=np.int64)


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


def _bounding_box(element: ifcopenshell.entity_instance) -> ifcopenshell.entity_instance | None:
    shape = getattr(element, "Representation", None)
    for representation in (shape.Representations or ()) if shape is not None else ():
        if representation.RepresentationIdentifier != "Box":
            continue
        for item in representation.Items or ():
            if item.is_a("IfcBoundingBox") and len(item.Corner.Coordinates) == 3:
                return item
    return None
