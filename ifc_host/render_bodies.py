"""Elements' bodies as world-space triangle meshes, one bad element never costing the whole view.

Runs inside the render child only. Geometry kernels fail in three ways on real files, and each is met here:

- an element raises or yields nothing: it is retried with OpenCascade, and if that fails too it is counted
  as *undrawn* (the view says how many);
- the kernel crashes the process (SIGSEGV inside the manifold kernel on some Revit furniture): a journal
  written before each element names the offender, and the parent process runs the child again with that
  element (and every element built like it) sent to OpenCascade, or skipped if
  OpenCascade crashed on it too (see render.py);
- the manifold kernel ignores an unbounded ``IfcHalfSpaceSolid`` clipping (walls clipped by a roof stand
  above it): such elements go to OpenCascade from the start;
- neither kernel places an element on an ``IfcGridPlacement`` (columns on a structural grid): their body is
  built in object coordinates and placed here, at the intersection of the two grid axes.

The fast path tessellates in one iterator, in object coordinates (bodies of more than ``COSTLY_FACES`` faces in a
second one, after the rest, so a budget they would eat leaves the rest built): elements that share a
representation (instances of one IfcMappedItem source) get one geometry from the kernel, built once and placed
per element (their meshes share the triangle arrays); a *careful* run (after a crash in the fast path)
builds each element on its own, journalled, so the next crash names its element exactly.

Every view has a budget: with a ``deadline`` (the wall clock, set by the parent from the view's timeout)
tessellation stops when it passes, and the elements not reached are *undrawn*, listed apart in
``Bodies.out_of_time`` so the view says they ran out of time; those with a cheaper representation are drawn
from it instead, counted apart: first a coarser body of their own (a ``Body-FallBack``, a ``Body`` of a sketch or
a coarser level of detail: render_simplified.py) in ``Bodies.simplified``, else (render_stand_ins.py) in
``Bodies.boxed`` (a sectioned solid's cross-section swept along its alignment: render_swept.py; its Box; the
opening a window or door fills) or ``Bodies.sketched`` (its FootPrint or Axis).
What was built is kept in the mesh cache, so the next view of the same model starts from it and gets further.

In a render server (``BodyOptions.background``), where a fork is safe (Linux: ``render_background.AVAILABLE``), the bodies of more than ``COSTLY_FACES`` faces are not built by the
view: a background build (render_background.py, a fork of the server) builds them into the mesh cache, and the view
waits for it until the earlier of its deadline and its ``costly_deadline`` (a model's first view: a short budget,
render.FIRST_VIEW_BUDGET_S); those not built by then get their stand-ins and are listed in ``Bodies.later``. A body a
build is making is never built by a view too; one a build failed on is built by the views as without a server.
"""
from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import ifcopenshell
import ifcopenshell.geom
import numpy as np

from ifc_host import render_background as background_builds
from ifc_host.render_background import BackgroundBuilds
from ifc_host.render_mesh_cache import MeshCache
from ifc_host.render_scene import Mesh, PlacementFrames, ViewError
from ifc_host.render_simplified import (
    BODY_IDENTIFIERS,
    body_representations,
    coarse_representation_ids,
    face_count,
    simplified_bodies,
)
from ifc_host.render_stand_ins import axis_stand_ins, box_stand_ins, footprint_stand_ins, opening_stand_ins
from ifc_host.render_swept import swept_stand_ins

FAST_LIBRARY = "manifold"  # about 8x faster than OpenCascade and good enough for a picture
EXACT_LIBRARY = "opencascade"
# Faces past which a faceted body is built after the others (a window of Revit's BasicHouse: 87 000 faces, 1.4 s).
COSTLY_FACES = 10_000
ALIGNMENT_STEP_M = 2.0
SECONDS_PER_FACE = 1.6e-5  # the manifold kernel on those windows, one core of the reference machine (CPU time)
# Representation types that describe a 3D body when a representation carries no identifier.
_SOLID_TYPES = ("SweptSolid", "AdvancedSweptSolid", "Brep", "AdvancedBrep", "CSG", "Clipping", "SolidModel",
                "SurfaceModel", "Tessellation", "MappedRepresentation")


@dataclass(frozen=True)
class BodyOptions:
    """How to tessellate, as decided by the parent after earlier attempts of the same render crashed."""
    careful: bool = False
    exact: frozenset[int] = frozenset()  # elements to build with OpenCascade (the manifold kernel crashed)
    skip: frozenset[int] = frozenset()  # elements no kernel could build without crashing
    journal_path: str | None = None
    cache_dir: str | None = None  # meshes kept for this model content (render_mesh_cache.py)
    deadline: float | None = None  # time.time() by which tessellation stops (the rest is out of time)
    # time.time() by which the costly bodies must be built or drawn as stand-ins (a model's first view: the parent's
    # render.FIRST_VIEW_BUDGET_S); None: the deadline alone
    costly_deadline: float | None = None
    # time.time() past which stand-ins the kernel builds (simplified bodies, swept sections) are no longer made: the
    # rest stays out of time, so that the view still draws and answers before its timeout; None: no limit
    stand_in_deadline: float | None = None
    threads: int = 1  # of the one-pass iterator (a background prepare uses the machine's cores, up to two)
    # Meshes of this model kept in memory by a render server (render_models.py): read first, added to.
    memory: dict[int, Mesh] | None = field(default=None, compare=False, repr=False)
    # A render server's builds of this model's costly bodies (render_background.py; needs cache_dir); None: none.
    background: BackgroundBuilds | None = field(default=None, compare=False, repr=False)
    build_threads: int = 1  # of a background build's iterator


FIRST_ATTEMPT = BodyOptions()


class NothingDrawn(ViewError):
    """A view with elements of which not one could be drawn: said as a failure, never as a blank image."""

    def __init__(self, view: str, bodies: Bodies) -> None:
        late = len(bodies.out_of_time)
        why = (f"{late} were not reached in the time allowed" if late == bodies.candidates else
               "no geometry kernel could build them" if not late else
               f"no geometry kernel could build {bodies.candidates - late}, {late} were not reached in the time allowed")
        super().__init__(f"nothing of view {view!r} could be drawn: it has {bodies.candidates} elements with a body, "
                         f"and {why}")


@dataclass
class Bodies:
    meshes: dict[int, Mesh] = field(default_factory=dict)
    undrawn: list[int] = field(default_factory=list)  # have a body, but no kernel could build it (or no time)
    out_of_time: list[int] = field(default_factory=list)  # the undrawn ones the budget did not reach
    simplified: list[int] = field(default_factory=list)  # out of time, drawn as a coarser body of theirs
    boxed: list[int] = field(default_factory=list)  # out of time, drawn as their Box (or the opening they fill)
    sketched: list[int] = field(default_factory=list)  # out of time, no Box: drawn from their FootPrint or Axis
    later: list[int] = field(default_factory=list)  # not drawn as their body: a background build is making it
    candidates: int = 0  # elements of the view with a body

    @property
    def nothing_drawn(self) -> bool:
        """The view has elements with a body and not one of them could be drawn: a blank image would lie."""
        return self.candidates > 0 and not self.meshes


class Journal:
    """Lines written straight to the file (no buffer), so they survive a native crash of this process."""

    def __init__(self, path: str | None) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600) if path else None

    def write(self, line: str) -> None:
        if self._fd is not None:
            os.write(self._fd, (line + "\n").encode("ascii"))

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def tessellate_bodies(model: ifcopenshell.file, elements: list[ifcopenshell.entity_instance],
                      options: BodyOptions) -> Bodies:
    """World-coordinate meshes of the elements that have a body; the ones that could not be built are listed."""
    bodies = Bodies()
    candidates = [e for e in elements if e.id() not in options.skip and has_body(e)]
    bodies.undrawn.extend(e.id() for e in elements if e.id() in options.skip and has_body(e))
    bodies.candidates = len(candidates) + len(bodies.undrawn)
    memory = options.memory
    if memory is not None:
        bodies.meshes.update((e.id(), memory[e.id()]) for e in candidates if e.id() in memory)
        candidates = [e for e in candidates if e.id() not in bodies.meshes]
    cache = MeshCache(options.cache_dir) if options.cache_dir else None
    if cache is not None and candidates:
        loaded = cache.load({e.id() for e in candidates})
        bodies.meshes.update(loaded)
        if memory is not None:
            memory.update(loaded)
        candidates = [e for e in candidates if e.id() not in bodies.meshes]
    if not candidates:
        return bodies
    exact_ids = set(options.exact) | _kin_of_offenders(candidates, options.exact)
    exact_ids |= {e.id() for e in candidates if _has_unbounded_half_space(e)}
    on_grid = [e for e in candidates if _on_grid(e)]
    grid_ids = {e.id() for e in on_grid}
    fast = [e for e in candidates if e.id() not in exact_ids and e.id() not in grid_ids]
    exact = [e for e in candidates if e.id() in exact_ids and e.id() not in grid_ids]
    background = options.background if options.cache_dir and not options.careful and background_builds.AVAILABLE else None
    # Costly bodies a background build is making: never built here too; waited for within the budget.
    building = background.pending() & {e.id() for e in candidates} if background is not None else set()
    on_grid, fast, exact = ([e for e in group if e.id() not in building] for group in (on_grid, fast, exact))
    journal = Journal(options.journal_path)
    deferred: set[int] = set(building)  # many-faced bodies left for a later view: they would not fit in the budget
    try:
        if on_grid:
            frames = PlacementFrames(model)
            for element in on_grid:
                if _out_of_time(options):
                    break
                _one_on_grid(element, frames, journal, bodies)
        if options.careful:
            for element in fast:
                if _out_of_time(options):
                    break
                _one(model, element, FAST_LIBRARY, journal, bodies)
        elif fast and not _out_of_time(options):
            # The many-faced bodies last, so that a budget spent on them leaves the rest built, not undrawn; and
            # only those whose estimated time fits what is left of it (the kernel cannot be stopped in a body).
            faces = {e.id(): _face_count(e) for e in fast}
            cheap = [e for e in fast if faces[e.id()] <= COSTLY_FACES]
            costly = [e for e in fast if faces[e.id()] > COSTLY_FACES]
            for batch in (cheap, costly):
                if batch is not cheap and background is not None and options.cache_dir:
                    # A render server builds them in the background (once the rest is built: the view needs that
                    # first), into the mesh cache, for this view within its budget and for the next ones; those a
                    # build failed on before are built here, as without one.
                    handed = [e for e in batch if e.id() not in background.failed]
                    background.start(_builder(model, handed, options.build_threads), {e.id() for e in handed},
                                     options.cache_dir)
                    building |= background.pending() & {e.id() for e in handed}
                    deferred |= building
                    batch = [e for e in batch if e.id() not in building]
                if batch is not cheap:
                    batch, later = _fitting(batch, faces, options)
                    deferred.update(e.id() for e in later)
                if batch and not _out_of_time(options):
                    journal.write("batch")
                    bodies.meshes.update(_iterate(model, batch, options.deadline, options.threads))
                    journal.write("batch done")
        # What the fast kernel could not build gets a second chance with the exact one (time allowing).
        tried = set(bodies.meshes) | ({e.id() for e in fast} - deferred if not _out_of_time(options) else set())
        exact.extend(e for e in fast if e.id() not in bodies.meshes and e.id() not in exact_ids
                     and e.id() not in deferred)
        for index, element in enumerate(exact):
            if _out_of_time(options):
                # Those not reached ran out of time (the fast kernel's failure was no verdict): stand-ins may draw them.
                tried -= {e.id() for e in exact[index:]} - set(bodies.meshes)
                break
            if element.id() not in bodies.meshes:
                _one(model, element, EXACT_LIBRARY, journal, bodies)
                tried.add(element.id())
    finally:
        journal.close()
    from_builds: set[int] = set()
    if building and background is not None and options.cache_dir:
        from_builds = background.collect(building, _costly_deadline(options))
        bodies.meshes.update(MeshCache(options.cache_dir).load(from_builds))
        from_builds &= set(bodies.meshes)
        bodies.later.extend(sorted(building - from_builds))
    if _out_of_time(options) or deferred - from_builds:
        # Out of time: what is an instance of a body already built (this view's or a kept one) is placed, not built.
        known = {**(memory or {}), **bodies.meshes}
        bodies.meshes.update(place_instances(model, [e for e in candidates if e.id() not in bodies.meshes], known))
        # The rest is drawn from a cheaper representation, counted apart: a coarser body of its own (a Body-FallBack,
        # a Body of a sketch or a coarser level of detail), else a box: a sectioned solid's cross-section swept along
        # its alignment, its Box, the opening it fills; else its FootPrint, else its Axis.
        simple = simplified_bodies(model, [e for e in candidates if e.id() not in bodies.meshes and e.id() not in tried],
                                   COSTLY_FACES, _room_faces(options), options.stand_in_deadline)
        bodies.meshes.update(simple)
        bodies.simplified.extend(sorted(simple))
        boxes = swept_stand_ins(model, [e for e in candidates if e.id() not in bodies.meshes and e.id() not in tried],
                                options.stand_in_deadline)
        bodies.meshes.update(boxes)
        bodies.boxed.extend(sorted(boxes))
        for stand_ins in (box_stand_ins, opening_stand_ins):
            boxes = stand_ins(model, [e for e in candidates if e.id() not in bodies.meshes and e.id() not in tried])
            bodies.meshes.update(boxes)
            bodies.boxed.extend(sorted(boxes))
        for stand_ins in (footprint_stand_ins, axis_stand_ins):
            sketches = stand_ins(model, [e for e in candidates if e.id() not in bodies.meshes and e.id() not in tried])
            bodies.meshes.update(sketches)
            bodies.sketched.extend(sorted(sketches))
        bodies.out_of_time.extend(e.id() for e in candidates if e.id() not in bodies.meshes and e.id() not in tried)
    bodies.undrawn.extend(e.id() for e in candidates if e.id() not in bodies.meshes)
    boxed = set(bodies.simplified) | set(bodies.boxed) | set(bodies.sketched)  # a stand-in is never kept as a body
    built = [bodies.meshes[e.id()] for e in candidates if e.id() in bodies.meshes and e.id() not in boxed]
    if memory is not None:
        memory.update((mesh.element_id, mesh) for mesh in built)
    if cache is not None:
        cache.store([mesh for mesh in built if mesh.element_id not in from_builds])  # a build stored those
    return bodies


def has_body(element: ifcopenshell.entity_instance) -> bool:
    shape = getattr(element, "Representation", None)
    if shape is None:
        return False
    for representation in shape.Representations or ():
        if not representation.Items:
            continue
        identifier = representation.RepresentationIdentifier
        if identifier in BODY_IDENTIFIERS or (identifier is None and representation.RepresentationType in _SOLID_TYPES):
            return True
    return False


def _iterate(model: ifcopenshell.file, elements: list[ifcopenshell.entity_instance],
             deadline: float | None = None, threads: int = 1) -> dict[int, Mesh]:
    """One pass of the fast kernel in object coordinates: elements sharing a representation (instances of one
    IfcMappedItem source, a type's body) get one geometry, built once and placed per element here."""
    return {mesh.element_id: mesh for mesh in _each_built(model, elements, deadline, threads)}


def _builder(model: ifcopenshell.file, elements: list[ifcopenshell.entity_instance],
             threads: int) -> Callable[[], Iterator[Mesh]]:
    """What a background build runs (in its fork): the fast kernel's meshes of these elements, as they come."""
    return lambda: _each_built(model, elements, None, threads)


def _each_built(model: ifcopenshell.file, elements: list[ifcopenshell.entity_instance],
                deadline: float | None = None, threads: int = 1) -> Iterator[Mesh]:
    if not elements:
        return
    iterator = ifcopenshell.geom.iterator(_settings(world=False), model, threads, include=elements,
                                          geometry_library=FAST_LIBRARY)
    if not iterator.initialize():
        return
    # The iterator builds an element's coarser bodies too (render_simplified.py), as shapes of the same element.
    coarse = coarse_representation_ids(elements)
    shared: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray] | None] = {}
    while True:
        shape = iterator.get()
        geometry = shape.geometry
        if coarse and _representation_id(geometry.id) in coarse:
            shared[geometry.id] = None
        if geometry.id not in shared:
            shared[geometry.id] = _arrays(geometry)
        arrays = shared[geometry.id]
        if arrays is not None:
            matrix = np.array(shape.transformation.matrix, dtype=np.float64).reshape(4, 4).T
            verts = arrays[0] @ matrix[:3, :3].T + matrix[:3, 3]
            if np.isfinite(verts).all():
                yield Mesh(int(shape.id), str(shape.type), verts, arrays[1], arrays[2])
        if (deadline is not None and time.time() >= deadline) or not iterator.next():
            break


def _representation_id(geometry_id: str) -> int | None:
    """The representation a kernel geometry was built from (its id leads the geometry's)."""
    match = re.match(r"\d+", geometry_id)
    return int(match.group()) if match else None


def _arrays(geometry: object) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Vertices, triangles and each triangle's item of a kernel geometry (None when it has no triangle)."""
    verts = np.frombuffer(geometry.verts_buffer, dtype=np.float64).reshape(-1, 3)  # type: ignore[attr-defined]
    faces = np.frombuffer(geometry.faces_buffer, dtype=np.int32).reshape(-1, 3)  # type: ignore[attr-defined]
    if not len(faces):
        return None
    items = np.frombuffer(geometry.item_ids_buffer, dtype=np.int32)  # type: ignore[attr-defined]
    if len(items) != len(faces):
        items = np.zeros(len(faces), dtype=np.int32)
    return verts, faces.astype(np.int64), items


def place_instances(model: ifcopenshell.file, elements: list[ifcopenshell.entity_instance],
                    known: dict[int, Mesh]) -> dict[int, Mesh]:
    """Meshes of the elements whose body is one IfcMappedItem of a source that a known mesh was built from: that
    mesh moved from its element's placement and mapping to this one's (exact, no kernel)."""
    frames = PlacementFrames(model)
    built_from: dict[int, tuple[Mesh, np.ndarray]] = {}
    wanted = {item.MappingSource.id() for e in elements if (item := _mapped_source(e)) is not None}
    for element_id, mesh in known.items():
        if not wanted - built_from.keys():
            break
        try:
            element = model.by_id(element_id)
        except RuntimeError:
            continue
        item = _mapped_source(element)
        source = item.MappingSource.id() if item is not None else None
        if source in wanted and source not in built_from:
            matrix = _instance_matrix(element, frames)
            if matrix is not None:
                built_from[source] = (mesh, np.linalg.inv(matrix))
    placed: dict[int, Mesh] = {}
    for element in elements:
        item = _mapped_source(element)
        if item is None or item.MappingSource.id() not in built_from:
            continue
        matrix = _instance_matrix(element, frames)
        if matrix is None:
            continue
        mesh, to_source = built_from[item.MappingSource.id()]
        move = matrix @ to_source
        placed[element.id()] = Mesh(element.id(), element.is_a(), mesh.verts @ move[:3, :3].T + move[:3, 3],
                                    mesh.faces, mesh.items)
    return placed


def _mapped_source(element: ifcopenshell.entity_instance) -> ifcopenshell.entity_instance | None:
    """The item of a body that is one IfcMappedItem, uncut by openings (a cut body is the element's own)."""
    if getattr(element, "HasOpenings", None):
        return None
    bodies = body_representations(element)[0]
    if len(bodies) != 1 or len(bodies[0].Items) != 1 or not bodies[0].Items[0].is_a("IfcMappedItem"):
        return None
    return bodies[0].Items[0]


def _instance_matrix(element: ifcopenshell.entity_instance, frames: PlacementFrames) -> np.ndarray | None:
    """World matrix (metres) of the element's mapped item: its placement times the item's mapping."""
    import ifcopenshell.util.placement

    placement = frames.of(element)
    item = _mapped_source(element)
    if placement is None or item is None or not item.MappingTarget.is_a("IfcCartesianTransformationOperator3D"):
        return None
    mapping = np.array(ifcopenshell.util.placement.get_mappeditem_transformation(item), dtype=float)
    mapping[:3, 3] *= frames.unit_scale
    return placement @ mapping


def _out_of_time(options: BodyOptions) -> bool:
    return options.deadline is not None and time.time() >= options.deadline


def _costly_deadline(options: BodyOptions) -> float | None:
    """When the costly bodies must be done: the earlier of the view's deadline and its budget for them."""
    limits = [t for t in (options.deadline, options.costly_deadline) if t is not None]
    return min(limits) if limits else None


def _one(model: ifcopenshell.file, element: ifcopenshell.entity_instance, library: str, journal: Journal,
         bodies: Bodies) -> None:
    journal.write(f"start {library} {element.id()}")
    try:
        shape = ifcopenshell.geom.create_shape(_settings(), element, geometry_library=library)
    except Exception:  # the kernel refused this element: it is counted as undrawn, the view goes on
        shape = None
    journal.write(f"done {element.id()}")
    mesh = _mesh(shape) if shape is not None else None
    if mesh is not None:
        bodies.meshes[element.id()] = mesh


def _settings(world: bool = True) -> ifcopenshell.geom.settings:
    settings = ifcopenshell.geom.settings()
    settings.set("use-world-coords", world)
    settings.set("no-normals", True)  # views use positions only; a fifth less time on Revit's faceted windows
    # Solids swept along an alignment's curves are lofted through a section every step along them: 2 m, not the
    # kernel's 0.5 m, is under a pixel of a view of a railway and builds its rails in a quarter of the time.
    settings.set("function-step-param", ALIGNMENT_STEP_M)
    return settings


def _on_grid(element: ifcopenshell.entity_instance) -> bool:
    placement = getattr(element, "ObjectPlacement", None)
    return placement is not None and placement.is_a("IfcGridPlacement")


def _one_on_grid(element: ifcopenshell.entity_instance, frames: PlacementFrames, journal: Journal,
                 bodies: Bodies) -> None:
    """Build the body in object coordinates and place it at its grid intersection."""
    matrix = _grid_frame(element.ObjectPlacement, frames)
    representation = next(iter(body_representations(element)[0]), None)
    if matrix is None or representation is None:
        return
    journal.write(f"start {EXACT_LIBRARY} {element.id()}")
    try:
        shape = ifcopenshell.geom.create_shape(_settings(world=False), representation,
                                               geometry_library=EXACT_LIBRARY)
    except Exception:  # counted as undrawn
        shape = None
    journal.write(f"done {element.id()}")
    if shape is None:
        return
    verts = np.frombuffer(shape.verts_buffer, dtype=np.float64).reshape(-1, 3)
    faces = np.frombuffer(shape.faces_buffer, dtype=np.int32).reshape(-1, 3)
    if not len(faces):
        return
    world = verts @ matrix[:3, :3].T + matrix[:3, 3]
    bodies.meshes[element.id()] = Mesh(element.id(), element.is_a(), world, faces.astype(np.int64),
                                       np.zeros(len(faces), dtype=np.int32))


def _grid_frame(placement: ifcopenshell.entity_instance, frames: PlacementFrames) -> np.ndarray | None:
    """World matrix (metres) of an IfcGridPlacement: the grid's frame moved to the axes' intersection."""
    intersection = placement.PlacementLocation
    axes = intersection.IntersectingAxes
    lines = [_axis_line(axis) for axis in axes]
    if len(lines) != 2 or any(line is None for line in lines):
        return None
    (p, r), (q, s) = lines  # p + t r and q + u s, in the grid's coordinates
    cross = r[0] * s[1] - r[1] * s[0]
    if abs(cross) < 1e-12:
        return None
    t = ((q[0] - p[0]) * s[1] - (q[1] - p[1]) * s[0]) / cross
    point = p + t * r
    offsets = list(intersection.OffsetDistances or ())
    z = float(offsets[2]) if len(offsets) > 2 else 0.0
    grid = next(iter((axes[0].PartOfU or ()) + (axes[0].PartOfV or ()) + (axes[0].PartOfW or ())), None)
    relative_to = getattr(placement, "PlacementRelTo", None) or (grid.ObjectPlacement if grid is not None else None)
    base = frames.of_placement(relative_to)
    if base is None:
        base = np.eye(4)
    local = np.eye(4)
    local[:3, 3] = np.array([point[0], point[1], z]) * frames.unit_scale
    return base @ local


def _axis_line(axis: ifcopenshell.entity_instance) -> tuple[np.ndarray, np.ndarray] | None:
    curve = axis.AxisCurve
    if not curve.is_a("IfcPolyline") or len(curve.Points) < 2:
        return None
    start, end = (np.array(point.Coordinates[:2], dtype=float) for point in curve.Points[:2])
    direction = end - start
    return (start, direction if axis.SameSense is not False else -direction)


def _mesh(shape: object) -> Mesh | None:
    geometry = getattr(shape, "geometry", None)
    if geometry is None:
        return None
    verts = np.frombuffer(geometry.verts_buffer, dtype=np.float64).reshape(-1, 3)
    faces = np.frombuffer(geometry.faces_buffer, dtype=np.int32).reshape(-1, 3)
    if not len(faces) or not np.isfinite(verts).all():
        return None
    items = np.frombuffer(geometry.item_ids_buffer, dtype=np.int32)
    if len(items) != len(faces):
        items = np.zeros(len(faces), dtype=np.int32)
    return Mesh(int(shape.id), str(shape.type), verts, faces.astype(np.int64), items)


def _body_items(element: ifcopenshell.entity_instance) -> Iterable[ifcopenshell.entity_instance]:
    """The items of the element's body (not of a coarser one) and of its representations without an identifier."""
    for representation in body_representations(element)[0]:
        yield from representation.Items or ()
    shape = getattr(element, "Representation", None)
    for representation in (shape.Representations or ()) if shape is not None else ():
        if representation.RepresentationIdentifier is None:
            yield from representation.Items or ()


def _body_signature(element: ifcopenshell.entity_instance) -> tuple[str, tuple[str, ...]]:
    """The element's class and the classes of its body's items (through mapped items)."""
    classes: list[str] = []
    stack = list(_body_items(element))
    while stack and len(classes) < 64:
        item = stack.pop()
        if item.is_a("IfcMappedItem"):
            stack.extend(item.MappingSource.MappedRepresentation.Items or ())
        else:
            classes.append(item.is_a())
    return element.is_a(), tuple(sorted(set(classes)))


def _kin_of_offenders(elements: list[ifcopenshell.entity_instance], offenders: frozenset[int]) -> set[int]:
    """Elements built like an offender (same class, same kinds of body items): they tend to crash the same
    way (a Revit export gives every cabinet its own type and map, all of them faceted surface models)."""
    if not offenders:
        return set()
    signatures = {_body_signature(e) for e in elements if e.id() in offenders}
    return {e.id() for e in elements if _body_signature(e) in signatures}


def _fitting(elements: list[ifcopenshell.entity_instance], faces: dict[int, int],
             options: BodyOptions) -> tuple[list[ifcopenshell.entity_instance], list[ifcopenshell.entity_instance]]:
    """The many-faced elements whose estimated building time fits in what is left of the budget (all of them
    without a budget), the smallest first; and the others."""
    deadline = _costly_deadline(options)
    if deadline is None:
        return elements, []
    room = max(0.0, deadline - time.time()) * max(1, options.threads)
    fits: list[ifcopenshell.entity_instance] = []
    later: list[ifcopenshell.entity_instance] = []
    for element in sorted(elements, key=lambda e: faces[e.id()]):
        cost = faces[element.id()] * SECONDS_PER_FACE
        (fits if cost <= room else later).append(element)
        room -= cost if cost <= room else 0.0
    return fits, later


def _face_count(element: ifcopenshell.entity_instance) -> int:
    """Faces of the element's faceted body items (through mapped items): what the kernel's time grows with."""
    return face_count(_body_items(element))


def _room_faces(options: BodyOptions) -> float | None:
    """How many faces the time left before the deadline can build (None: no deadline)."""
    if options.deadline is None:
        return None
    return max(0.0, options.deadline - time.time()) * max(1, options.threads) / SECONDS_PER_FACE


def _has_unbounded_half_space(element: ifcopenshell.entity_instance) -> bool:
    stack = list(_body_items(element))
    seen = 0
    while stack and seen < 64:
        item, seen = stack.pop(), seen + 1
        if item.is_a("IfcBooleanResult"):
            second = item.SecondOperand
            if second.is_a() == "IfcHalfSpaceSolid":
                return True
            stack.extend((item.FirstOperand, second))
        elif item.is_a("IfcMappedItem"):
            stack.extend(item.MappingSource.MappedRepresentation.Items or ())
    return False
