"""The plan of one storey: a horizontal section 1.2 m above its level, drawn like an architect's plan."""
from __future__ import annotations

import math
from dataclasses import dataclass

import ifcopenshell
import ifcopenshell.util.element
import numpy as np
import shapely
import shapely.ops
from shapely.geometry import Polygon
from shapely.geometry.base import BaseGeometry

from ifc_host import render_palette as style
from ifc_host.render_bodies import FIRST_ATTEMPT, BodyOptions, NothingDrawn, tessellate_bodies
from ifc_host.render_canvas import Canvas, LegendEntry, title_with_highlights
from ifc_host.render_geometry import kept_footprint, kept_sections
from ifc_host.render_scene import (
    PLAN_CUT_HEIGHT_M,
    Drawing,
    Mesh,
    PlacementFrames,
    ViewError,
    ViewSpec,
    elements_of_storey,
)

STRUCTURE_CLASSES = ("IfcWall", "IfcCurtainWall", "IfcSlab", "IfcBeam", "IfcFooting", "IfcChimney", "IfcPlate",
                     "IfcMember")
# Drawn as thin outlines when they are wholly above the cut, as beams are in an architect's plan.
OVERHEAD_CLASSES = ("IfcBeam", "IfcBeamStandardCase", "IfcMember", "IfcMemberStandardCase")
HIGHLIGHT_TEXT = (200, 60, 0)
_ARC_STEPS = 16
_LABEL_ROOM_M = 0.3  # around door swings, so marks near the building's edge stay inside the image


@dataclass(frozen=True)
class _Drawn:
    element: ifcopenshell.entity_instance
    mesh: Mesh
    area: BaseGeometry


def draw_plan(model: ifcopenshell.file, spec: ViewSpec, element_ids: list[int], max_px: int,
              options: BodyOptions = FIRST_ATTEMPT) -> Drawing:
    assert spec.storey is not None
    elements = {e.id(): e for e in elements_of_storey(spec.storey)}
    bodies = tessellate_bodies(model, list(elements.values()), options)
    if bodies.nothing_drawn:
        raise NothingDrawn(spec.name, bodies)
    meshes = bodies.meshes
    highlighted = set(element_ids)

    spaces: list[_Drawn] = []
    cut: list[_Drawn] = []
    below: list[_Drawn] = []
    above: list[_Drawn] = []
    uncut_highlights: list[_Drawn] = []
    cut_areas = dict(zip(meshes, kept_sections(list(meshes.values()), spec.cut_z), strict=True))
    for element_id, mesh in meshes.items():
        element = elements[element_id]
        high = mesh.z_range[1]
        area = cut_areas[element_id]
        if element.is_a("IfcSpace"):
            area = area or kept_footprint(mesh)
            if area is not None:
                spaces.append(_Drawn(element, mesh, area))
        elif area is not None:
            cut.append(_Drawn(element, mesh, area))
        elif high < spec.cut_z or element_id in highlighted or element.is_a() in OVERHEAD_CLASSES:
            outline = kept_footprint(mesh)
            if outline is None:
                continue
            if high < spec.cut_z:
                below.append(_Drawn(element, mesh, outline))
            elif element.is_a() in OVERHEAD_CLASSES:
                above.append(_Drawn(element, mesh, outline))
            if element_id in highlighted:
                uncut_highlights.append(_Drawn(element, mesh, outline))

    overhead_only = bool(meshes) and not (spaces or cut or below or above or uncut_highlights)
    if overhead_only:  # all above the cut (a roof storey): their outlines, as a roof plan, never a blank image
        above = [_Drawn(elements[i], mesh, outline) for i, mesh in meshes.items()
                 if (outline := kept_footprint(mesh)) is not None]
        if not above:
            raise ViewError(f"nothing of view {spec.name!r} could be drawn: its {len(meshes)} bodies have no "
                            f"outline in plan")
    frames = PlacementFrames(model)
    swings = {d.element.id(): swing for d in cut if d.element.is_a("IfcDoor")
              if (swing := _door_swing(d.element, d.mesh, frames)) is not None}
    drawn_ids = {d.element.id() for d in (*spaces, *cut, *below, *above, *uncut_highlights)}
    shown = highlighted & drawn_ids
    extents = [d.area.bounds for d in (*spaces, *cut, *below, *above, *uncut_highlights)]
    for swing in swings.values():
        if not swing.lines:  # sliding and folding doors have no swing to draw
            continue
        points = np.concatenate(swing.lines)
        extents.append((*(points.min(axis=0) - _LABEL_ROOM_M), *(points.max(axis=0) + _LABEL_ROOM_M)))
    canvas = Canvas(_bounds(extents), max_px,
                    _title(spec, len(shown), len(highlighted - shown), len(bodies.undrawn), len(bodies.out_of_time),
                           len(bodies.boxed), len(bodies.sketched), len(bodies.later), len(bodies.simplified))
                    + (f" \u2014 nothing is cut at +{PLAN_CUT_HEIGHT_M:.1f} m: {len(above)} elements above it, as "
                       f"outlines" if overhead_only else ""),
                    _legend(bool(shown)))

    for item in below:
        canvas.fill(item.area, None, style.BELOW_OUTLINE)
    for item in above:
        canvas.fill(item.area, None, style.ABOVE_OUTLINE)
    for item in spaces:
        lit = item.element.id() in highlighted
        canvas.fill(item.area, style.HIGHLIGHT_TINT if lit else style.SPACE_FILL,
                    style.HIGHLIGHT if lit else style.SPACE_OUTLINE, 2.0 if lit else 1.0)
    door_marks: list[tuple[_Swing, str, bool]] = []
    for item in sorted(cut, key=_draw_order):
        element = item.element
        lit = element.id() in highlighted
        if element.is_a("IfcWindow") or (lit and element.is_a("IfcDoor")):
            # Thin frames read as a window (or a changed door) once their bounding box is filled in.
            canvas.fill(item.area.minimum_rotated_rectangle, style.HIGHLIGHT if lit else style.WINDOW_FILL,
                        style.HIGHLIGHT if lit else style.WINDOW_OUTLINE)
        fill, outline = _cut_colours(element)
        canvas.fill(item.area, style.HIGHLIGHT if lit else fill, style.HIGHLIGHT if lit else outline)
        swing = swings.get(element.id())
        if swing is not None:
            for polyline in swing.lines:
                canvas.line(polyline, style.HIGHLIGHT if lit else style.DOOR, 2.0 if lit else 1.0)
            if element.Tag:
                door_marks.append((swing, element.Tag, lit))
    for item in uncut_highlights:
        canvas.fill(item.area, None, style.HIGHLIGHT, 3.0)

    for item in spaces:
        _label_space(canvas, item)
    for swing, mark, lit in door_marks:
        _label_door(canvas, swing.label_at, swing.width, mark, lit)
    return Drawing(*canvas.finish(), undrawn=bodies.undrawn, out_of_time=bodies.out_of_time,
                   boxed=bodies.boxed, sketched=bodies.sketched, later=bodies.later,
                   simplified=bodies.simplified)


def _cut_colours(element: ifcopenshell.entity_instance) -> tuple[style.RGB, style.RGB | None]:
    if element.is_a("IfcDoor"):
        return style.DOOR, None
    if element.is_a("IfcWindow"):
        return style.WINDOW_OUTLINE, None
    if element.is_a("IfcColumn"):
        return style.COLUMN, None
    if any(element.is_a(c) for c in STRUCTURE_CLASSES):
        return style.WALL, None
    return style.OTHER_CUT, None


def _draw_order(item: _Drawn) -> int:
    """Furniture and the like first, then structure, then the windows and doors sitting in it."""
    element = item.element
    if element.is_a("IfcDoor") or element.is_a("IfcWindow"):
        return 3
    if element.is_a("IfcColumn"):
        return 2
    return 1 if any(element.is_a(c) for c in STRUCTURE_CLASSES) else 0


@dataclass(frozen=True)
class _Swing:
    lines: list[np.ndarray]
    label_at: np.ndarray
    width: float


def _door_swing(door: ifcopenshell.entity_instance, mesh: Mesh, frames: PlacementFrames) -> _Swing | None:
    """Leaf and arc of a hinged door, opening toward the door's local +y (sliding doors get none)."""
    frame = frames.of(door)
    if frame is None:
        return None
    rotation, origin = frame[:3, :3], frame[:3, 3]
    local = (mesh.verts - origin) @ rotation
    x0, x1, face = float(local[:, 0].min()), float(local[:, 0].max()), float(local[:, 1].max())
    width = x1 - x0
    if width < 0.2:
        return None
    operation = _operation_type(door)
    if "SLIDING" in operation or "FOLDING" in operation or "REVOLVING" in operation or "ROLLING" in operation:
        hinges: list[tuple[float, float]] = []
    elif operation.startswith("DOUBLE_DOOR") or operation == "DOUBLE_SWING_LEFT_RIGHT":
        hinges = [(x0, width / 2), (x1, -width / 2)]
    elif operation.endswith("RIGHT"):
        hinges = [(x1, -width)]
    else:
        hinges = [(x0, width)]
    lines = []
    for hinge_x, leaf in hinges:
        radius = abs(leaf)
        angles = np.linspace(0.0, math.pi / 2, _ARC_STEPS)
        arc = np.column_stack([hinge_x + np.sign(leaf) * radius * np.cos(angles), face + radius * np.sin(angles)])
        lines.append(arc)
        lines.append(np.array([[hinge_x, face], [hinge_x, face + radius]]))
    to_world = rotation[:2, :2]
    world_lines = [pts @ to_world.T + origin[:2] for pts in lines]
    label_local = np.array([(x0 + x1) / 2, face + 0.42 * width])
    return _Swing(world_lines, label_local @ to_world.T + origin[:2], width)


def _operation_type(door: ifcopenshell.entity_instance) -> str:
    operation = getattr(door, "OperationType", None)
    if not operation or operation in ("NOTDEFINED", "USERDEFINED"):
        door_type = ifcopenshell.util.element.get_type(door)
        operation = getattr(door_type, "OperationType", None) if door_type is not None else None
    return str(operation or "SINGLE_SWING_LEFT")


def _label_space(canvas: Canvas, item: _Drawn) -> None:
    polygon = max((p for p in getattr(item.area, "geoms", [item.area]) if isinstance(p, Polygon)),
                  key=lambda p: p.area, default=None)
    if polygon is None or polygon.is_empty:
        return
    centroid = polygon.centroid
    anchor = centroid if polygon.contains(centroid) else shapely.ops.polylabel(polygon, tolerance=0.05)
    minx, miny, maxx, maxy = polygon.bounds
    box_w, box_h = (maxx - minx) * canvas.px_per_unit * 0.9, (maxy - miny) * canvas.px_per_unit * 0.9
    name, long_name = item.element.Name or "", getattr(item.element, "LongName", None) or ""
    size = max(8, min(20, round(0.42 * canvas.px_per_unit)))
    while size >= 8:
        for lines in ([(name, size, True), (long_name, max(8, round(size * 0.85)), False)], [(name, size, True)]):
            lines = [line for line in lines if line[0]]
            if lines and canvas.text_fits(lines, box_w, box_h):
                canvas.text_block((anchor.x, anchor.y), lines, style.TEXT)
                return
        size -= 2


def _label_door(canvas: Canvas, point: np.ndarray, width: float, mark: str, lit: bool) -> None:
    size = max(8, min(14, round(0.26 * canvas.px_per_unit)))
    if width * canvas.px_per_unit < 18 or not canvas.text_fits([(mark, size, False)], width * canvas.px_per_unit * 1.6,
                                                               size * 2):
        return
    canvas.text_block((float(point[0]), float(point[1])), [(mark, size, False)],
                      HIGHLIGHT_TEXT if lit else style.DOOR)


def _bounds(extents: list[tuple[float, float, float, float]]) -> tuple[float, float, float, float]:
    boxes = np.array([box for box in extents if not any(math.isnan(v) for v in box)])
    if not len(boxes):
        return (0.0, 0.0, 10.0, 10.0)
    return float(boxes[:, 0].min()), float(boxes[:, 1].min()), float(boxes[:, 2].max()), float(boxes[:, 3].max())


def _title(spec: ViewSpec, shown: int, elsewhere: int, undrawn: int, out_of_time: int, boxed: int = 0,
           sketched: int = 0, later: int = 0, simplified: int = 0) -> str:
    return title_with_highlights(f"{spec.shown_name} \u2014 plan cut at +{PLAN_CUT_HEIGHT_M:.1f} m", shown,
                                       elsewhere, undrawn, out_of_time, boxed, sketched, later, simplified)


def _legend(with_highlight: bool) -> list[LegendEntry]:
    entries = [LegendEntry("Wall", style.WALL), LegendEntry("Door", style.DOOR),
               LegendEntry("Window", style.WINDOW_FILL, style.WINDOW_OUTLINE),
               LegendEntry("Space", style.SPACE_FILL, style.SPACE_OUTLINE)]
    if with_highlight:
        entries.append(LegendEntry("Highlighted", style.HIGHLIGHT))
    return entries
