"""Parallel projections of element bodies: flat-shaded triangles painted back to front.

The axonometric ("3D", "3D: <storey>") is an isometric from the south-west, above; an elevation
("North elevation", ...) is an orthographic view of the whole model from that side, level with it.
With highlighted elements, everything else is ghosted (faded toward white) and the highlighted
elements are painted last, on top, so a change inside the building stays visible.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import ifcopenshell
import numpy as np

from ifc_host import render_palette as style
from ifc_host.render_alignment import alignment_lines
from ifc_host.render_bodies import FIRST_ATTEMPT, BodyOptions, NothingDrawn, tessellate_bodies
from ifc_host.render_canvas import Canvas, LegendEntry, title_with_highlights
from ifc_host.render_scene import Drawing, Mesh, ViewSpec, all_elements, elements_of_storey

_SQRT2, _SQRT3, _SQRT6 = np.sqrt(2.0), np.sqrt(3.0), np.sqrt(6.0)
_LIGHT = np.array([-0.3, -0.6, 0.75]) / np.linalg.norm([-0.3, -0.6, 0.75])


@dataclass(frozen=True)
class Projection:
    """Unit vectors: toward the viewer, and the image's right and up directions, in world coordinates."""
    toward_viewer: np.ndarray
    right: np.ndarray
    up: np.ndarray


ISOMETRIC = Projection(np.array([-1.0, -1.0, 1.0]) / _SQRT3, np.array([1.0, -1.0, 0.0]) / _SQRT2,
                       np.array([1.0, 1.0, 2.0]) / _SQRT6)
_UP = np.array([0.0, 0.0, 1.0])
ELEVATIONS = {side: Projection(toward, np.cross(_UP, toward), _UP) for side, toward in (
    ("north", np.array([0.0, 1.0, 0.0])), ("south", np.array([0.0, -1.0, 0.0])),
    ("east", np.array([1.0, 0.0, 0.0])), ("west", np.array([-1.0, 0.0, 0.0])))}
# The site plan: from straight above, north (+y) up.
ELEVATIONS["above"] = Projection(np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))
_GHOST = 0.6
_SPLITS_ACROSS_MODEL = 30  # no triangle edge longer than this fraction of the model's extent
_MAX_TRIANGLES = 1_500_000  # share of white mixed into elements that are not highlighted
_CLASS_COLOURS: list[tuple[str, style.RGB]] = [
    ("IfcWindow", (150, 200, 230)),
    ("IfcDoor", (110, 150, 210)),
    ("IfcSlab", (200, 200, 200)),
    ("IfcColumn", (170, 170, 170)),
    ("IfcWall", (232, 230, 224)),
]
_OTHER_COLOUR: style.RGB = (215, 205, 185)
_REFERENCE_COLOUR: style.RGB = (150, 150, 150)
ALIGNMENT_COLOUR: style.RGB = (200, 30, 140)


def draw_axonometric(model: ifcopenshell.file, spec: ViewSpec, element_ids: list[int], max_px: int,
                     options: BodyOptions = FIRST_ATTEMPT, references: list[ifcopenshell.file] | None = None) -> Drawing:
    elements = elements_of_storey(spec.storey) if spec.storey is not None else all_elements(model)
    bodies = tessellate_bodies(model, [e for e in elements if not e.is_a("IfcSpace")], options)
    meshes = bodies.meshes
    highlighted = set(element_ids) & set(meshes)
    classes = {e.id(): e for e in elements}

    triangles, colours, lit, behind = [], [], [], []
    for element_id, mesh in meshes.items():
        triangles.append(_outward(mesh.verts[mesh.faces]))
        base = style.HIGHLIGHT if element_id in highlighted else _colour_of(classes[element_id])
        colours.append(np.tile(np.array(base, dtype=float), (len(mesh.faces), 1)))
        lit.append(np.full(len(mesh.faces), element_id in highlighted))
        behind.append(np.zeros(len(mesh.faces), dtype=bool))
    z_band = _z_band(meshes.values()) if spec.storey is not None else None
    for reference in references or []:  # whole models; in a storey's view only what overlaps its heights
        for mesh in tessellate_bodies(reference, [e for e in all_elements(reference) if not e.is_a("IfcSpace")],
                                      FIRST_ATTEMPT).meshes.values():
            if z_band is None or (mesh.z_range[1] >= z_band[0] and mesh.z_range[0] <= z_band[1]):
                triangles.append(_outward(mesh.verts[mesh.faces]))
                colours.append(np.tile(np.array(_REFERENCE_COLOUR, dtype=float), (len(mesh.faces), 1)))
                lit.append(np.zeros(len(mesh.faces), dtype=bool))
                behind.append(np.ones(len(mesh.faces), dtype=bool))
    axes = alignment_lines(model) if spec.facing == "above" else []  # the site plan draws alignments on top
    if bodies.nothing_drawn and not axes:
        raise NothingDrawn(spec.name, bodies)
    title = _title(spec, len(highlighted), len(set(element_ids) - highlighted), len(bodies.undrawn),
                   len(bodies.out_of_time), len(bodies.boxed), len(bodies.sketched), len(bodies.later),
                   len(bodies.simplified))
    legend = [LegendEntry("Highlighted", style.HIGHLIGHT)] if highlighted else []
    if references:
        legend.append(LegendEntry("Reference models", _REFERENCE_COLOUR))
    if axes:
        legend.append(LegendEntry("Alignment", ALIGNMENT_COLOUR))
    if not triangles:
        canvas = Canvas(_extent(axes) if axes else (0.0, 0.0, 10.0, 10.0), max_px, title, legend)
        _draw_axes(canvas, axes)
        return Drawing(*canvas.finish(), undrawn=bodies.undrawn, out_of_time=bodies.out_of_time,
                   boxed=bodies.boxed, sketched=bodies.sketched, later=bodies.later,
                   simplified=bodies.simplified)

    tris = np.concatenate(triangles)
    rgb = np.concatenate(colours)
    is_lit = np.concatenate(lit)
    is_reference = np.concatenate(behind)
    normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    lengths = np.linalg.norm(normals, axis=1)
    projection = ELEVATIONS[spec.facing] if spec.kind == "elevation" else ISOMETRIC
    keep = (lengths > 1e-12) & (normals @ projection.toward_viewer > 1e-9 * lengths)
    tris, rgb, is_lit, normals = tris[keep], rgb[keep], is_lit[keep], normals[keep] / lengths[keep, None]
    is_reference = is_reference[keep]
    tris, rgb, is_lit, normals, is_reference = _split_long_triangles(tris, rgb, is_lit, normals, is_reference)
    shade = 0.45 + 0.55 * np.abs(normals @ _LIGHT)
    rgb = rgb * shade[:, None]
    if highlighted:
        rgb[~is_lit] = rgb[~is_lit] * (1 - _GHOST) + 255 * _GHOST
    rgb[is_reference] = rgb[is_reference] * (1 - _GHOST) + 255 * _GHOST  # greyed, whatever is highlighted

    screen = np.stack([tris @ projection.right, tris @ projection.up], axis=-1)
    depth = -(tris @ projection.toward_viewer).mean(axis=1)
    # Painter's algorithm: references first (behind everything), then far triangles first; highlighted ones last.
    order = np.lexsort((-depth, is_lit, ~is_reference))

    flat = screen.reshape(-1, 2)
    canvas = Canvas(_extent([flat, *axes]), max_px, title, legend)
    pixels = canvas.to_px_array(flat).reshape(-1, 6)[order].tolist()
    for points, ink in zip(pixels, _inks(rgb[order]), strict=True):
        canvas.fill_triangle(points, ink)
    _draw_axes(canvas, axes)
    return Drawing(*canvas.finish(), undrawn=bodies.undrawn, out_of_time=bodies.out_of_time,
                   boxed=bodies.boxed, sketched=bodies.sketched, later=bodies.later,
                   simplified=bodies.simplified)


def _extent(point_sets: list[np.ndarray]) -> tuple[float, float, float, float]:
    points = np.concatenate(point_sets)
    return float(points[:, 0].min()), float(points[:, 1].min()), float(points[:, 0].max()), float(points[:, 1].max())


def _draw_axes(canvas: Canvas, axes: list[np.ndarray]) -> None:
    for axis in axes:  # seen from above, north up: the screen's x and y are the world's
        canvas.line(axis, ALIGNMENT_COLOUR, 3.0)


def _outward(tris: np.ndarray) -> np.ndarray:
    """Bodies are closed; orient them outward (positive volume) so back faces can be culled."""
    signed_volume = np.einsum("ij,ij->i", tris[:, 0], np.cross(tris[:, 1], tris[:, 2])).sum()
    return tris if signed_volume >= 0 else tris[:, ::-1]


def _z_band(meshes: Iterable[Mesh]) -> tuple[float, float] | None:
    ranges = [m.z_range for m in meshes]
    return (min(r[0] for r in ranges), max(r[1] for r in ranges)) if ranges else None


def _inks(rgb: np.ndarray) -> list[int]:
    """Colours packed as Pillow's RGB ink (what ``ImageDraw`` computes per call; here once for all)."""
    r, g, b = np.clip(np.rint(rgb), 0, 255).astype(np.uint32).T
    return (r | (g << 8) | (b << 16) | np.uint32(0xFF000000)).view(np.int32).tolist()


def _split_long_triangles(tris: np.ndarray, *extra: np.ndarray) -> tuple[np.ndarray, ...]:
    """Bisect triangles along their longest edge until short (carrying per-triangle values along).

    Painting long slivers by their centroid's depth is what makes a painter's algorithm draw far walls
    over near ones; short triangles keep the ordering honest.
    """
    limit = max(float(np.ptp(tris.reshape(-1, 3), axis=0).max()) / _SPLITS_ACROSS_MODEL, 0.25)
    finished: list[tuple[np.ndarray, ...]] = []
    pending = (tris, *extra)
    while len(pending[0]):
        tris = pending[0]
        edges = tris[:, [1, 2, 0]] - tris
        lengths = np.linalg.norm(edges, axis=2)
        longest = lengths.argmax(axis=1)
        too_long = lengths[np.arange(len(tris)), longest] > limit
        if sum(len(f[0]) for f in finished) + 2 * too_long.sum() > _MAX_TRIANGLES:
            too_long[:] = False
        finished.append(tuple(values[~too_long] for values in pending))
        if not too_long.any():
            break
        tris, longest = tris[too_long], longest[too_long]
        # Rotate corners so the longest edge runs from corner 0 to corner 1, then split it in the middle.
        order = (np.arange(3)[None, :] + longest[:, None]) % 3
        a, b, c = (tris[np.arange(len(tris))[:, None], order][:, k] for k in range(3))
        middle = (a + b) / 2
        halves = np.concatenate([np.stack([a, middle, c], axis=1), np.stack([middle, b, c], axis=1)])
        pending = (halves, *(np.concatenate([v[too_long], v[too_long]]) for v in pending[1:]))
    return tuple(np.concatenate([f[k] for f in finished]) for k in range(len(finished[0])))


def _colour_of(element: ifcopenshell.entity_instance) -> style.RGB:
    for ifc_class, colour in _CLASS_COLOURS:
        if element.is_a(ifc_class):
            return colour
    return _OTHER_COLOUR


def _title(spec: ViewSpec, shown: int, elsewhere: int, undrawn: int, out_of_time: int, boxed: int = 0,
           sketched: int = 0, later: int = 0, simplified: int = 0) -> str:
    how = ("seen from above, north up" if spec.facing == "above" else f"seen from the {spec.facing}"
           if spec.kind == "elevation" else "axonometric from the south-west")
    return title_with_highlights(f"{spec.shown_name} \u2014 {how}", shown, elsewhere, undrawn, out_of_time,
                                       boxed, sketched, later, simplified)

