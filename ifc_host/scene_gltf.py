"""The 3D scene of a view, a set of elements or a change, as a glTF 2.0 binary (runs in the render child only).

What goes in
    ``view`` picks elements as the renderer does (render_scene.resolve_view): a storey ("Level 2" or
    "3D: Level 2") gives that storey's elements, "3D" and the elevations the whole model. ``element_ids``
    without a view gives just those elements; with one, they are added to it. The changed elements
    (``changes`` {added, modified, deleted}) always go in, first: deleted ones are read from the model as
    it was before (``before_path``), modified ones whose placement moved carry it as ``extras.before_matrix``.
    Spaces and openings are drawn by nobody, as in the axonometric (a changed one is a node without a mesh). Every changed element gets a node even when it
    has no body (a node without a mesh), so the node count per ``change`` equals the change report's.
References
    A view's scene (not one of listed elements alone) also holds the elements of the session's reference models
    (``references``), as the 3D PNG draws them behind the working model: the whole model, or in a storey's scene
    what overlaps the storey's heights; each placed into the working model's coordinates (refs.placement: both
    models' IfcMapConversion, else the identity). They come last, after every element of the working model, within
    what the budgets leave; their nodes say ``model``: the reference's name, and ``change``: null, always.
Nodes
    One per element under a root that turns IFC's Z up into glTF's Y up, named by GlobalId, with ``extras``
    {step_id, ifc_class, name, storey, model: "working" or a reference's name, change: added|modified|deleted|null,
    properties, before_matrix?}. ``properties`` holds up to MAX_PROPERTIES "Pset.Property" values (text, capped).
Instances
    Each mesh is stored in its element's own coordinates (the inverse of its ObjectPlacement) and the node
    carries the placement. Elements whose local triangles are the same (to 0.1 mm; a door type's mapped
    representation placed many times) share one glTF mesh.
Colours
    From the IFC styles of each triangle's representation item (IfcStyledItem on the item, else on the
    element's material), as IfcSurfaceStyleShading's SurfaceColour and Transparency; else a class colour.
Budgets
    ``max_bytes``: elements are added (changed first) while the binary stays under it; ``time_budget_s``:
    unchanged elements are tessellated in batches while time remains. What was left out is counted in the
    scene's ``extras`` (omitted_for_size, omitted_for_time) and in the result, beside ``undrawn`` (a body no
    geometry kernel could build), exactly as the PNG renderer counts it.
"""
from __future__ import annotations

import hashlib
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ifcopenshell
import ifcopenshell.util.element
import numpy as np

from ifc_host.render_bodies import BodyOptions, has_body, tessellate_bodies
from ifc_host.render_scene import (
    Mesh,
    PlacementFrames,
    ViewError,
    all_elements,
    elements_of_storey,
    resolve_view,
    storey_label,
    storeys_by_elevation,
)
from ifc_host.scene import CHANGE_KINDS, DEFAULT_MAX_BYTES, DEFAULT_TIME_BUDGET_S
from ifc_host.scene_glb import NODE_JSON_BYTES, RGBA, GlbBuilder, SceneMesh, SceneNode
from ifc_host.spatial import storey_labels, storey_of

if TYPE_CHECKING:
    from ifc_host.render_models import OpenModels

BATCH = 200  # unchanged elements tessellated per step of the time budget
MAX_PROPERTIES = 24
MAX_VALUE_CHARS = 80
_WELD_M = 1e-4
_EYE3, _EYE4, _LAST_ROW = np.eye(3), np.eye(4), np.array([0.0, 0.0, 0.0, 1.0])
_CLASS_COLOURS: list[tuple[str, RGBA]] = [
    ("IfcWindow", (0.59, 0.78, 0.9, 0.5)), ("IfcDoor", (0.43, 0.59, 0.82, 1.0)),
    ("IfcSlab", (0.78, 0.78, 0.78, 1.0)), ("IfcColumn", (0.67, 0.67, 0.67, 1.0)),
    ("IfcWall", (0.91, 0.9, 0.88, 1.0)), ("IfcRoof", (0.7, 0.45, 0.38, 1.0)),
]
_OTHER_COLOUR: RGBA = (0.84, 0.8, 0.73, 1.0)


@dataclass(frozen=True)
class SceneRequest:
    view: str | None
    element_ids: tuple[int, ...]
    changes: dict[str, tuple[int, ...]]
    max_bytes: int = DEFAULT_MAX_BYTES
    time_budget_s: float = DEFAULT_TIME_BUDGET_S


@dataclass(frozen=True)
class Reference:
    """A reference model of the session, as its scene nodes name it (``model``), and how to tessellate it."""
    name: str
    model: ifcopenshell.file
    options: BodyOptions
    placement: np.ndarray  # its world coordinates (metres) -> the working model's


@dataclass(frozen=True)
class BuiltScene:
    glb: bytes
    view: str
    nodes: int
    counts: dict[str, int]  # nodes per change kind
    undrawn: list[int]
    omitted_for_size: int
    omitted_for_time: int
    references: dict[str, int]  # nodes per reference model


def build_scene(model: ifcopenshell.file, before: ifcopenshell.file | None, request: SceneRequest,
                options: BodyOptions, before_options: BodyOptions,
                references: tuple[Reference, ...] = ()) -> BuiltScene:
    started = time.monotonic()
    changed = {kind: [i for i in request.changes.get(kind, ()) if _exists(model if kind != "deleted" else before, i)]
               for kind in CHANGE_KINDS}
    spec_name, scope, storey_scoped = _scope(model, request)
    change_of = {i: kind for kind in ("added", "modified") for i in changed[kind]}
    first = [model.by_id(i) for kind in ("added", "modified") for i in changed[kind]]
    rest = [e for e in scope if e.id() not in change_of and not e.is_a("IfcSpace") and has_body(e)]

    writer = _Writer(model, request.max_bytes)
    bodies = tessellate_bodies(model, [e for e in first if _drawn(e)], options)
    undrawn = list(bodies.undrawn)
    before_frames = PlacementFrames(before) if before is not None else None
    for element in first:
        before_matrix = None
        if change_of[element.id()] == "modified" and before_frames is not None and _exists(before, element.id()):
            before_matrix = _moved(writer.frames.of(element), before_frames.of(before.by_id(element.id())))
        writer.add(element, bodies.meshes.get(element.id()), change_of[element.id()], before_matrix, force=True)
    if before is not None and changed["deleted"]:
        gone = [before.by_id(i) for i in changed["deleted"]]
        old = tessellate_bodies(before, [e for e in gone if _drawn(e)], before_options)
        undrawn.extend(old.undrawn)
        ghost_writer = _Writer(before, request.max_bytes, share=writer)
        for element in gone:
            ghost_writer.add(element, old.meshes.get(element.id()), "deleted", None, force=True)

    omitted_for_time = 0
    for start in range(0, len(rest), BATCH):
        batch = rest[start:start + BATCH]
        if writer.full:
            writer.omitted += len(batch)
            continue
        if time.monotonic() - started > request.time_budget_s:
            omitted_for_time += len(batch)
            continue
        meshes = tessellate_bodies(model, batch, options)
        undrawn.extend(meshes.undrawn)
        for element in batch:
            if element.id() in meshes.meshes:
                writer.add(element, meshes.meshes[element.id()], None, None)

    reference_nodes = {r.name: 0 for r in references} if spec_name != SELECTED else {}
    band = writer.z_band() if storey_scoped else None
    for reference in references if spec_name != SELECTED else ():
        ref_writer = _Writer(reference.model, request.max_bytes, share=writer, model_name=reference.name,
                             placement=reference.placement)
        candidates = [e for e in all_elements(reference.model) if not e.is_a("IfcSpace") and has_body(e)]
        for start in range(0, len(candidates), BATCH):
            batch = candidates[start:start + BATCH]
            if writer.full:
                writer.omitted += len(batch)
                continue
            if time.monotonic() - started > request.time_budget_s:
                omitted_for_time += len(batch)
                continue
            meshes = tessellate_bodies(reference.model, batch, reference.options)
            undrawn.extend(meshes.undrawn)
            for element in batch:
                mesh = meshes.meshes.get(element.id())
                if mesh is not None and (band is None or ref_writer.overlaps(mesh, band)):
                    reference_nodes[reference.name] += int(ref_writer.add(element, mesh, None, None))

    counts = {kind: sum(1 for n in writer.builder.nodes if n.extras["change"] == kind) for kind in CHANGE_KINDS}
    extras = {"view": spec_name, "elements": len(writer.builder.nodes), "changes": counts,
              "undrawn": len(undrawn), "omitted_for_size": writer.omitted, "omitted_for_time": omitted_for_time,
              "units": "metre", "model": "working", "references": reference_nodes}
    glb = writer.builder.build(writer.origin(), extras)
    return BuiltScene(glb, spec_name, len(writer.builder.nodes), counts, sorted(set(undrawn)), writer.omitted,
                      omitted_for_time, reference_nodes)


SELECTED = "selected elements"  # the scene of listed elements without a view: no references around them


def _scope(model: ifcopenshell.file, request: SceneRequest) -> tuple[str, list[ifcopenshell.entity_instance], bool]:
    """The view's name, the elements it shows (see the module docstring) and whether it is one storey's."""
    missing = [i for i in request.element_ids if not _exists(model, i)]
    if missing:
        raise ViewError(f"no element {', '.join(f'#{i}' for i in missing[:10])} in the model")
    listed = [model.by_id(i) for i in request.element_ids]
    if request.view is None and request.element_ids:
        return SELECTED, listed, False
    changed = [i for kind in ("added", "modified") for i in request.changes.get(kind, ())]
    spec = resolve_view(model, request.view, changed or list(request.element_ids))
    elements = facts_of(model).contents(spec.storey) if spec.storey is not None else all_elements(model)
    seen = {e.id() for e in elements}
    return spec.name, elements + [e for e in listed if e.id() not in seen], spec.storey is not None


class _Writer:
    """Adds elements as nodes, sharing meshes whose local triangles are the same, within the size budget."""

    def __init__(self, model: ifcopenshell.file, max_bytes: int, share: _Writer | None = None,
                 model_name: str = "working", placement: np.ndarray | None = None) -> None:
        self.model = model
        self.model_name = model_name
        # A reference's nodes are placed into the working model's coordinates; they leave the origin (float32
        # precision is for the working model) and the storey band alone.
        self.placement = placement if placement is not None and not np.allclose(placement, _EYE4) else None
        self.is_reference = model_name != "working"
        self.facts = facts_of(model)
        self.frames = self.facts.frames
        self.max_bytes = max_bytes
        self.builder = share.builder if share is not None else GlbBuilder()
        self._shared: dict[bytes, int] = share._shared if share is not None else {}
        self._state = share._state if share is not None else {"bytes": 0, "omitted": 0, "full": False,
                                                              "low": None, "high": None}
        self._storeys = self.facts.storeys
        self._colours = self.facts.colours

    @property
    def full(self) -> bool:
        return bool(self._state["full"])

    @property
    def omitted(self) -> int:
        return int(self._state["omitted"])

    @omitted.setter
    def omitted(self, value: int) -> None:
        self._state["omitted"] = value

    def origin(self) -> np.ndarray:
        low, high = self._state["low"], self._state["high"]
        return np.zeros(3) if low is None else np.round((np.asarray(low) + np.asarray(high)) / 2, 3)

    def z_band(self) -> tuple[float, float] | None:
        """The heights the working model's meshes span so far (a storey's scene: where references show)."""
        low, high = self._state["low"], self._state["high"]
        return None if low is None else (float(low[2]), float(high[2]))

    def overlaps(self, mesh: Mesh, band: tuple[float, float]) -> bool:
        """Whether this model's mesh, placed into the working model's coordinates, reaches into the band."""
        z = mesh.verts[:, 2] if self.placement is None else mesh.verts @ self.placement[2, :3] + self.placement[2, 3]
        return bool(z.max() >= band[0] and z.min() <= band[1])

    def add(self, element: ifcopenshell.entity_instance, mesh: Mesh | None, change: str | None,
            before_matrix: np.ndarray | None, force: bool = False) -> bool:
        """Add the element's node (False when the size budget left it out)."""
        placement, matrix, prepared = self.facts.prepared(element, mesh)
        mesh_index, cost = None, NODE_JSON_BYTES
        if mesh is not None and prepared is not None:
            local, parts, key, low, high = prepared
            mesh_index = self._shared.get(key)
            if mesh_index is None:
                scene_mesh = SceneMesh(local, parts)
                cost += scene_mesh.byte_size()
            if not force and self._state["bytes"] + cost > self.max_bytes:
                self._state["full"] = True
                self._state["omitted"] += 1
                return False
            if mesh_index is None:
                mesh_index = self.builder.add_mesh(scene_mesh)
                self._shared[key] = mesh_index
            if not self.is_reference:
                self._state["low"] = low if self._state["low"] is None else np.minimum(self._state["low"], low)
                self._state["high"] = high if self._state["high"] is None else np.maximum(self._state["high"], high)
        self._state["bytes"] += cost
        extras: dict[str, Any] = {**self.facts.extras(element, self._storey), "model": self.model_name,
                                  "change": change}
        if before_matrix is not None:
            extras["before_matrix"] = before_matrix @ np.linalg.inv(placement) @ matrix if placement is not None \
                else before_matrix
        if self.placement is not None:
            matrix = self.placement @ matrix
        self.builder.add_node(SceneNode(_global_id(element), extras, mesh_index, matrix))
        return True

    def _storey(self, element: ifcopenshell.entity_instance) -> str | None:
        known = self.facts.storey_of().get(element.id())
        if known is not None:
            return known
        storey = storey_of(element)
        if storey is None:
            return None
        return storey_label(storey, self._storeys) if storey in self._storeys else storey.Name


class ModelFacts:
    """What a scene reads of a model apart from its meshes: placements, storeys and their contents, colours,
    properties. Kept with the model (``facts_of``) for as long as it lives: a render server keeps the models it
    opened (render_models.py) and never changes them, so the next scene of the same content reads none of it again,
    and the first scene after a commit reads only what its elements need."""

    def __init__(self, model: ifcopenshell.file) -> None:
        self.model = model
        self.frames = PlacementFrames(model)
        self.storeys = storeys_by_elevation(model)
        self.colours = _StyleColours(model)
        self._contents: dict[int, list[ifcopenshell.entity_instance]] = {}
        self._storey_of: dict[int, str] | None = None
        self._type_psets: dict[int, dict[str, Any]] = {}
        self._extras: dict[int, dict[str, Any]] = {}
        self._prepared: dict[int, tuple[Mesh | None, np.ndarray | None, np.ndarray, Any]] = {}

    def contents(self, storey: ifcopenshell.entity_instance) -> list[ifcopenshell.entity_instance]:
        if storey.id() not in self._contents:
            self._contents[storey.id()] = elements_of_storey(storey)
        return self._contents[storey.id()]

    def storey_of(self) -> dict[int, str]:
        """Each element's storey label, from one pass over the storeys' contents (not a walk up per element)."""
        if self._storey_of is None:
            labels = storey_labels(self.model) if self.storeys else {}
            found: dict[int, str] = {}
            for storey in self.storeys:
                for element in self.contents(storey):
                    found.setdefault(element.id(), labels[storey.id()])
            self._storey_of = found
        return self._storey_of

    def extras(self, element: ifcopenshell.entity_instance,
               storey: Callable[[ifcopenshell.entity_instance], str | None]) -> dict[str, Any]:
        """A node's extras but its ``change`` (and ``before_matrix``): step_id, ifc_class, name, storey, model,
        properties."""
        known = self._extras.get(element.id())
        if known is None:
            known = self._extras[element.id()] = {
                "step_id": element.id(), "ifc_class": element.is_a(), "name": getattr(element, "Name", None),
                "storey": storey(element), "model": "working", "properties": _properties(element, self._type_psets)}
        return known

    def prepared(self, element: ifcopenshell.entity_instance, mesh: Mesh | None) -> tuple[
            np.ndarray | None, np.ndarray, tuple[np.ndarray, Any, bytes, np.ndarray, np.ndarray] | None]:
        """The element's world placement, its node matrix and, for this mesh, its triangles in the element's own
        coordinates with their colours, geometry key and world bounds (once per element and mesh)."""
        known = self._prepared.get(element.id())
        if known is not None and known[0] is mesh:
            return known[1], known[2], known[3]
        placement = self.frames.of(element) if element.is_a("IfcProduct") else None
        matrix = placement if placement is not None and _rigid(placement) else np.eye(4)
        prepared = None
        if mesh is not None:
            local = _to_local(mesh.verts, matrix)
            parts = self.colours.parts(element, mesh)
            prepared = (local, parts, _geometry_key(local, parts), mesh.verts.min(axis=0), mesh.verts.max(axis=0))
        self._prepared[element.id()] = (mesh, placement, matrix, prepared)
        return placement, matrix, prepared


_facts: weakref.WeakKeyDictionary[ifcopenshell.file, ModelFacts] = weakref.WeakKeyDictionary()


def facts_of(model: ifcopenshell.file) -> ModelFacts:
    facts = _facts.get(model)
    if facts is None:
        facts = _facts[model] = ModelFacts(model)
    return facts


class _StyleColours:
    """Colour of each representation item from its IFC style, else from the element's material's style."""

    def __init__(self, model: ifcopenshell.file) -> None:
        self.model = model
        self._items: dict[int, RGBA | None] = {}
        self._materials: dict[int, RGBA | None] = {}

    def parts(self, element: ifcopenshell.entity_instance, mesh: Mesh) -> tuple[tuple[RGBA, np.ndarray], ...]:
        unique_items = np.unique(mesh.items)
        colours: list[RGBA | None] = [self._item_colour(int(item)) for item in unique_items.tolist()]
        if any(colour is None for colour in colours):
            fallback = self._material_colour(element) or _class_colour(element)
            colours = [colour or fallback for colour in colours]
        by_colour: dict[RGBA, list[int]] = {}
        for item, colour in zip(unique_items.tolist(), colours, strict=True):
            by_colour.setdefault(colour, []).append(item)  # type: ignore[arg-type]
        if len(by_colour) == 1:
            return ((next(iter(by_colour)), mesh.faces),)
        return tuple((colour, mesh.faces[np.isin(mesh.items, items)]) for colour, items in by_colour.items())

    def _item_colour(self, item_id: int) -> RGBA | None:
        if item_id not in self._items:
            try:
                item = self.model.by_id(item_id) if item_id > 0 else None
            except RuntimeError:
                item = None
            styled = getattr(item, "StyledByItem", None) or () if item is not None else ()
            self._items[item_id] = next((c for s in styled if (c := _styled_item_colour(s)) is not None), None)
        return self._items[item_id]

    def _material_colour(self, element: ifcopenshell.entity_instance) -> RGBA | None:
        material = ifcopenshell.util.element.get_material(element, should_skip_usage=True)
        if material is None:
            return None
        if material.id() not in self._materials:
            self._materials[material.id()] = _material_style_colour(material)
        return self._materials[material.id()]


def _material_style_colour(material: ifcopenshell.entity_instance) -> RGBA | None:
    for candidate in _materials_in(material):
        for definition in getattr(candidate, "HasRepresentation", None) or ():
            for representation in definition.Representations or ():
                for styled in representation.Items or ():
                    colour = _styled_item_colour(styled)
                    if colour is not None:
                        return colour
    return None


def _materials_in(material: ifcopenshell.entity_instance | None) -> Iterable[ifcopenshell.entity_instance]:
    if material is None:
        return ()
    if material.is_a("IfcMaterial"):
        return (material,)
    if material.is_a("IfcMaterialLayerSet"):
        return [layer.Material for layer in material.MaterialLayers or () if layer.Material is not None]
    if material.is_a("IfcMaterialConstituentSet"):
        return [c.Material for c in material.MaterialConstituents or () if c.Material is not None]
    if material.is_a("IfcMaterialProfileSet"):
        return [p.Material for p in material.MaterialProfiles or () if p.Material is not None]
    if material.is_a("IfcMaterialList"):
        return list(material.Materials or ())
    return ()


def _styled_item_colour(styled: ifcopenshell.entity_instance) -> RGBA | None:
    stack = list(styled.Styles or ())
    while stack:
        style = stack.pop(0)
        if style.is_a("IfcPresentationStyleAssignment"):  # IFC2X3
            stack.extend(style.Styles or ())
        elif style.is_a("IfcSurfaceStyle"):
            for element in style.Styles or ():
                if element.is_a("IfcSurfaceStyleShading") and element.SurfaceColour is not None:
                    colour = element.SurfaceColour
                    alpha = 1.0 - float(getattr(element, "Transparency", None) or 0.0)
                    return (_unit(colour.Red), _unit(colour.Green), _unit(colour.Blue), max(0.15, _unit(alpha)))
    return None


def _unit(value: Any) -> float:
    return round(min(1.0, max(0.0, float(value or 0.0))), 4)


def _class_colour(element: ifcopenshell.entity_instance) -> RGBA:
    return next((colour for ifc_class, colour in _CLASS_COLOURS if element.is_a(ifc_class)), _OTHER_COLOUR)


def _properties(element: ifcopenshell.entity_instance, type_cache: dict[int, dict[str, Any]]) -> dict[str, str]:
    """Up to MAX_PROPERTIES "Pset.Property" values, the type's (read once per type) under the element's own."""
    try:
        element_type = ifcopenshell.util.element.get_type(element)
        merged: dict[str, Any] = {}
        if element_type is not None:
            if element_type.id() not in type_cache:
                type_cache[element_type.id()] = ifcopenshell.util.element.get_psets(element_type)
            merged = {name: dict(values) for name, values in type_cache[element_type.id()].items()}
        for name, values in ifcopenshell.util.element.get_psets(element, should_inherit=False).items():
            merged.setdefault(name, {}).update(values)
    except Exception:  # an odd property structure costs the properties, not the scene
        return {}
    out: dict[str, str] = {}
    for pset, values in merged.items():
        for name, value in values.items():
            if name == "id" or isinstance(value, dict | list):
                continue
            out[f"{pset}.{name}"] = str(value)[:MAX_VALUE_CHARS]
            if len(out) >= MAX_PROPERTIES:
                return out
    return out


def _drawn(element: ifcopenshell.entity_instance) -> bool:
    """Whether an element's body belongs in the picture (spaces and openings would hide what they hold)."""
    return element.is_a("IfcProduct") and not element.is_a("IfcSpace") and not element.is_a("IfcFeatureElement")


def _exists(model: ifcopenshell.file | None, element_id: int) -> bool:
    if model is None:
        return False
    try:
        return model.by_id(int(element_id)) is not None
    except RuntimeError:
        return False


def _global_id(element: ifcopenshell.entity_instance) -> str:
    return str(getattr(element, "GlobalId", None) or f"#{element.id()}")


def _rigid(matrix: np.ndarray) -> bool:
    """A rotation and translation (what a glTF node matrix may hold without the validator's TRS complaint)."""
    rotation = matrix[:3, :3]
    return bool(np.abs(rotation @ rotation.T - _EYE3).max() <= 1e-6 and np.linalg.det(rotation) > 0
                and np.abs(matrix[3] - _LAST_ROW).max() <= 1e-12)


def _to_local(verts: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    rotation, translation = matrix[:3, :3], matrix[:3, 3]
    return (verts - translation) @ rotation  # rotation is orthonormal: its inverse is its transpose


def _moved(after: np.ndarray | None, before: np.ndarray | None) -> np.ndarray | None:
    if after is None or before is None or np.allclose(after, before, atol=1e-6):
        return None
    return before


def _geometry_key(local: np.ndarray, parts: tuple[tuple[RGBA, np.ndarray], ...]) -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.round(local / _WELD_M).astype(np.int64).tobytes())
    for colour, faces in parts:
        digest.update(repr(colour).encode())
        digest.update(np.ascontiguousarray(faces, dtype=np.int64).tobytes())
    return digest.digest()


def scene_request(request: dict[str, Any], models: OpenModels | None = None) -> dict[str, Any]:
    """The render child's scene job: {model_path, content_key?, before_path?, view, element_ids, changes,
    max_bytes, time_budget_s, glb_path, ...the renderer's recovery fields}; writes the GLB, returns the result.
    A render server passes the models it keeps (``models``): the model the PNG of the same view opened, with the
    meshes it built, is the one the scene reads (and the model as it was before a change is kept there too)."""
    from ifc_host.render_scene import open_model

    memory = before_memory = builds = None
    before_path = request.get("before_path")
    if models is not None:
        kept = models.get(request["model_path"], request.get("content_key"))
        model, memory, builds = kept.model, kept.meshes, kept.builds
        kept_before = models.get(before_path) if before_path else None
        before, before_memory = (kept_before.model, kept_before.meshes) if kept_before is not None else (None, None)
    else:
        model = open_model(request["model_path"])
        before = open_model(before_path) if before_path else None
    options = BodyOptions(careful=bool(request.get("careful")),
                          exact=frozenset(int(i) for i in request.get("exact") or ()),
                          skip=frozenset(int(i) for i in request.get("skip") or ()),
                          journal_path=request.get("journal_path"), cache_dir=request.get("cache_dir"), memory=memory,
                          background=builds)  # a costly body a view's background build is making is not built twice
    before_options = BodyOptions(careful=options.careful, exact=options.exact, skip=options.skip,
                                 journal_path=options.journal_path, cache_dir=request.get("before_cache_dir"),
                                 memory=before_memory)
    references = tuple(_reference(spec, model, models) for spec in request.get("refs") or ())
    changes = request.get("changes") or {}
    element_ids = [int(i) for i in request.get("element_ids") or ()]
    for global_id in request.get("global_ids") or ():
        try:
            element = model.by_guid(global_id)
        except RuntimeError:
            element = None
        if element is None:
            raise ViewError(f"no element with GlobalId {global_id!r} in the model")
        element_ids.append(element.id())
    scene = build_scene(model, before, SceneRequest(
        view=request.get("view"), element_ids=tuple(element_ids),
        changes={kind: tuple(int(i) for i in changes.get(kind) or ()) for kind in CHANGE_KINDS},
        max_bytes=int(request.get("max_bytes") or DEFAULT_MAX_BYTES),
        time_budget_s=float(request.get("time_budget_s") or DEFAULT_TIME_BUDGET_S)), options, before_options,
        references)
    with open(request["glb_path"], "wb") as handle:
        handle.write(scene.glb)
    return {"ok": True, "view": scene.view, "nodes": scene.nodes, "counts": scene.counts, "bytes": len(scene.glb),
            "undrawn": scene.undrawn, "omitted_for_size": scene.omitted_for_size,
            "omitted_for_time": scene.omitted_for_time, "references": scene.references}


def _reference(spec: dict[str, Any], model: ifcopenshell.file, models: OpenModels | None) -> Reference:
    """A reference model of the request, opened (a render server keeps it, with its meshes, like the working one)."""
    from ifc_host.refs import reference_placement
    from ifc_host.render_scene import open_model

    memory = None
    if models is not None:
        kept = models.get(spec["path"], spec.get("content_key"))
        reference, memory = kept.model, kept.meshes
    else:
        reference = open_model(spec["path"])
    options = BodyOptions(careful=bool(spec.get("careful")), exact=frozenset(int(i) for i in spec.get("exact") or ()),
                          skip=frozenset(int(i) for i in spec.get("skip") or ()),
                          journal_path=spec.get("journal_path"), cache_dir=spec.get("cache_dir"), memory=memory)
    return Reference(str(spec["name"]), reference, options, np.asarray(reference_placement(model, reference)))
