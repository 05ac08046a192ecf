"""Plan geometry from triangle meshes: horizontal sections and projected footprints (shapely, metres).

``kept_sections`` and ``kept_footprint`` remember what they computed for each mesh while that mesh lives (a
render server keeps an open model's meshes, render_models.py), so a second plan of the storey, or the first one
after render.prepare drew it in the background, skips the shapely work (a second of CPU on a Revit storey)."""
from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as np
import shapely
from shapely.geometry.base import BaseGeometry

from ifc_host.render_scene import Mesh

# Above this many triangles a footprint is approximated by its convex hull (a union would be slow).
MAX_FOOTPRINT_TRIANGLES = 4000
_EDGE_STARTS = [0, 1, 2]
_EDGE_ENDS = [1, 2, 0]


def sections(meshes: list[Mesh], z: float) -> list[BaseGeometry | None]:
    """Each mesh's cross-section by the plane at height z, as filled area (None where the plane misses).

    A single-item body is filled even-odd (so hollow sections keep their holes). A body made of several
    items (door and window linings, panels, casings) becomes a MultiPolygon of its items' sections, which
    may overlap: fine for a filled drawing, and much cheaper than their union. Segments are chained per
    item for all meshes at once; only unusual sections (open chains, nested rings) go one by one.
    """
    results: list[BaseGeometry | None] = [None] * len(meshes)
    cut = [(k, *_segments(mesh, z)) for k, mesh in enumerate(meshes)]
    cut = [(k, segments, items) for k, segments, items in cut if len(segments)]
    if not cut:
        return results
    owners = np.concatenate([np.full(len(segments), k, dtype=np.int64) for k, segments, _ in cut])
    items = np.concatenate([item_ids for _, _, item_ids in cut]).astype(np.int64)
    lines = shapely.linestrings(np.concatenate([segments for _, segments, _ in cut]))
    # Chain segments per (mesh, item): where items touch, a chain through both would stop at the junction.
    keys, chain_group = np.unique((owners << 32) | (items & 0xFFFFFFFF), return_inverse=True)
    chain_owner = keys >> 32
    order = np.argsort(chain_group, kind="stable")
    merged = shapely.line_merge(shapely.multilinestrings(lines[order], indices=chain_group[order]))
    parts, part_chain = shapely.get_parts(merged, return_index=True)
    part_owner = chain_owner[part_chain]
    is_ring = shapely.is_closed(parts) & (shapely.get_num_coordinates(parts) >= 4)
    coords, ring_index = shapely.get_coordinates(parts[is_ring], return_index=True)
    ring_polygons = shapely.polygons(shapely.linearrings(coords, indices=ring_index)) if len(coords) else \
        np.empty(0, dtype=object)
    ring_owner = part_owner[is_ring]

    part_count = np.bincount(part_owner, minlength=len(meshes))
    ring_count = np.bincount(ring_owner, minlength=len(meshes))
    chains = np.bincount(chain_owner, minlength=len(meshes))
    single_ring = (part_count == 1) & (ring_count == 1)
    # Several items, each closing into rings: a MultiPolygon of all of them.
    ring_sets = (part_count == ring_count) & (chains > 1) & ~single_ring

    for owner, polygon in zip(ring_owner[single_ring[ring_owner]], ring_polygons[single_ring[ring_owner]],
                              strict=True):
        results[owner] = polygon
    in_sets = ring_sets[ring_owner]
    if in_sets.any():
        set_owners, set_index = np.unique(ring_owner[in_sets], return_inverse=True)
        for owner, multipolygon in zip(set_owners, shapely.multipolygons(ring_polygons[in_sets], indices=set_index),
                                       strict=True):
            results[owner] = multipolygon
    for k, segments, item_ids in cut:
        if not (single_ring[k] or ring_sets[k]):
            results[k] = _rings_to_area(segments, even_odd=len(np.unique(item_ids)) == 1)
    return results


def _segments(mesh: Mesh, z: float) -> tuple[np.ndarray, np.ndarray]:
    """The (n, 2, 2) line segments where the plane at height z crosses the mesh, and each one's item."""
    above = mesh.verts[:, 2] >= z
    corners_above = above[mesh.faces].sum(axis=1)
    crossing = (corners_above == 1) | (corners_above == 2)
    if not crossing.any():
        return np.empty((0, 2, 2)), np.empty(0, dtype=np.int64)
    faces = mesh.faces[crossing]
    starts, ends = faces[:, _EDGE_STARTS], faces[:, _EDGE_ENDS]
    cuts = above[starts] != above[ends]
    # Interpolate every crossing edge from its lower end: the two triangles sharing an edge then give
    # bit-identical points (even when the mesh repeats the vertices), so the segments chain into rings.
    start_below = ~above[starts]
    low = np.where(start_below, starts, ends)
    high = np.where(start_below, ends, starts)
    z_low, z_high = mesh.verts[low, 2], mesh.verts[high, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(cuts, (z - z_low) / (z_high - z_low), 0.0)
    points = mesh.verts[low, :2] + t[..., None] * (mesh.verts[high, :2] - mesh.verts[low, :2])
    # Each crossing triangle has exactly two crossing edges: one segment per triangle, in order.
    return points[cuts].reshape(-1, 2, 2), mesh.items[crossing]


def footprint(mesh: Mesh) -> BaseGeometry | None:
    """The mesh projected onto the XY plane.

    A closed, consistently oriented body projects exactly onto its upward-facing triangles (every vertical
    line through it enters once through a face below and leaves through one above), so only those are
    united: half the work. Open or inconsistently oriented meshes (surface models) use every triangle.
    """
    triangles = mesh.verts[mesh.faces][:, :, :2]
    edge_a = triangles[:, 1] - triangles[:, 0]
    edge_b = triangles[:, 2] - triangles[:, 0]
    signed = edge_a[:, 0] * edge_b[:, 1] - edge_a[:, 1] * edge_b[:, 0]
    up, down = signed > 1e-9, signed < -1e-9
    up_area, down_area = signed[up].sum(), -signed[down].sum()
    closed = up_area > 0 and abs(up_area - down_area) <= 1e-3 * up_area
    triangles = triangles[up if closed else up | down]
    if len(triangles) > MAX_FOOTPRINT_TRIANGLES:
        return shapely.MultiPoint(mesh.verts[:, :2]).convex_hull
    if not len(triangles):
        return None
    closed = np.concatenate([triangles, triangles[:, :1]], axis=1)
    return shapely.union_all(shapely.polygons(closed))


def _rings_to_area(segments: np.ndarray, *, even_odd: bool) -> BaseGeometry | None:
    if not len(segments):
        return None
    merged = shapely.line_merge(shapely.multilinestrings(shapely.linestrings(segments)))
    parts = shapely.get_parts(merged)
    is_ring = shapely.is_closed(parts) & (shapely.get_num_coordinates(parts) >= 4)
    polygons = [shapely.make_valid(shapely.Polygon(ring.coords)) for ring in parts[is_ring]]
    if not is_ring.all():
        # Rings touching at a vertex don't merge into closed lines; polygonize recovers their faces.
        polygons.extend(shapely.get_parts(shapely.polygonize(list(parts[~is_ring]))))
    polygons = [p for p in polygons if not p.is_empty]
    if not polygons:
        return None
    if len(polygons) == 1:
        return polygons[0]
    if not even_odd:
        return shapely.union_all(polygons)
    area = polygons[0]
    for polygon in polygons[1:]:
        area = area.symmetric_difference(polygon)
    return area


class _ShapeMemo:
    """Values computed from a mesh, by the mesh's identity, dropped when the mesh is."""

    def __init__(self) -> None:
        self._kept: dict[tuple[int, object], tuple[weakref.ref[Mesh], BaseGeometry | None]] = {}

    def get(self, mesh: Mesh, key: object) -> tuple[bool, BaseGeometry | None]:
        entry = self._kept.get((id(mesh), key))
        if entry is not None and entry[0]() is mesh:
            return True, entry[1]
        return False, None

    def put(self, mesh: Mesh, key: object, value: BaseGeometry | None) -> None:
        slot = (id(mesh), key)
        self._kept[slot] = (weakref.ref(mesh, lambda _, kept=self._kept, slot=slot: kept.pop(slot, None)), value)


_memo = _ShapeMemo()


def kept_sections(meshes: list[Mesh], z: float) -> list[BaseGeometry | None]:
    """``sections(meshes, z)``, computing only those not computed before for the same mesh and height."""
    results: list[BaseGeometry | None] = [None] * len(meshes)
    missing: list[int] = []
    for k, mesh in enumerate(meshes):
        known, value = _memo.get(mesh, ("cut", z))
        if known:
            results[k] = value
        else:
            missing.append(k)
    for k, value in zip(missing, sections([meshes[k] for k in missing], z) if missing else [], strict=True):
        results[k] = value
        _memo.put(meshes[k], ("cut", z), value)
    return results


def kept_footprint(mesh: Mesh, compute: Callable[[Mesh], BaseGeometry | None] = footprint) -> BaseGeometry | None:
    """``footprint(mesh)``, computed once per mesh."""
    known, value = _memo.get(mesh, "footprint")
    if not known:
        value = compute(mesh)
        _memo.put(mesh, "footprint", value)
    return value
