"""Before → after for a script run: what changed on each element, old value next to new, grouped by kind.

The "before" side is read through a view of the model as it was: entities the run touched are read from
the snapshots the change recorder took just before their first change, entities it created do not exist,
and everything else is read from the model itself (untouched, so unchanged). Nothing is copied up front.

Every modified element gets a cheap classification (which kinds of things changed: its attributes, property
sets, type, container, material, own placement, own shape, openings, or only geometry that followed
something else); values are worked out for the first elements of each group only, so a 10,000-element change
costs little more than its classification.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import ifcopenshell
import ifcopenshell.util.unit

from ifc_host.changes import ChangeSet, Ref

MAX_MODIFIED_SHOWN = 40
MAX_ADDED_SHOWN = 10
MAX_DELETED_SHOWN = 10
MAX_GROUP_IDS = 200
MAX_VALUE_CHARS = 160

# Kinds of change, in the order a report lists them, with the words the change report says for each (the epilogue
# reads them through nexus_kind_words()).
KIND_WORDS = {
    "placement": "moved", "rebased": "placement re-based onto a moved host (position unchanged)",
    "shape": "shape changed", "openings": "openings or fillings changed",
    "type": "type changed", "container": "container changed", "attributes": "attributes changed",
    "properties": "property or quantity values changed", "material": "material changed",
    "relationships": "other relationships changed",
    "followed": "geometry followed (placed relative to, or cut by, something that changed)",
    "linked": "linked data changed", "other": "changed through linked data",
}
KINDS = tuple(KIND_WORDS)
# "linked": something the element refers to changed (a material layer, a classification reference); the report
# names it (ChangeSet.causes). "other" is left only for an element nothing explains; it never comes alone
# without the entities named either.
MAX_VIA = 5
_PROPERTY_CLASSES = ("IfcPropertyAbstraction", "IfcPropertyDefinition", "IfcPhysicalQuantity",
                     "IfcMaterialDefinition", "IfcMaterialUsageDefinition")
_FACET_ATTRIBUTES = frozenset({"ObjectPlacement", "Representation", "RepresentationMaps", "HasPropertySets"})
_SKIPPED_ATTRIBUTES = frozenset({"OwnerHistory", "ObjectPlacement", "Representation", "RepresentationMaps",
                                 "HasPropertySets", "GlobalId"})
_REL_KINDS = (
    ("IfcRelDefinesByProperties", "properties"), ("IfcRelDefinesByType", "type"),
    ("IfcRelContainedInSpatialStructure", "container"), ("IfcRelAggregates", "container"),
    ("IfcRelNests", "container"), ("IfcRelAssociatesMaterial", "material"), ("IfcRelVoidsElement", "openings"),
    ("IfcRelFillsElement", "openings"),
)


class ModelView:
    """The model as it is now (`before=None`) or as it was before the run (snapshots of touched entities)."""

    def __init__(self, model: ifcopenshell.file, changes: ChangeSet | None = None) -> None:
        self.model = model
        self.changes = changes
        self.schema = ifcopenshell.ifcopenshell_wrapper.schema_by_name(model.schema_identifier)
        self._attribute_index: dict[str, dict[str, int]] = {}
        self._subtype: dict[tuple[str, str], bool] = {}
        self._memo: dict[tuple[int, str], Any] = {}
        self._referenced_before: dict[int, set[int]] | None = None
        self._entities: dict[int, ifcopenshell.entity_instance | None] = {}
        self._classes: dict[int, str | None] = {}

    @property
    def is_before(self) -> bool:
        return self.changes is not None

    def _entity(self, entity_id: int) -> ifcopenshell.entity_instance | None:
        if entity_id in self._entities:
            return self._entities[entity_id]
        entity = None
        if self.changes is None or entity_id not in self.changes.created:
            try:
                entity = self.model.by_id(entity_id)
            except RuntimeError:
                entity = None
        self._entities[entity_id] = entity
        return entity

    def exists(self, entity_id: int) -> bool:
        if self.changes is not None and entity_id in self.changes.before:
            return True
        return self._entity(entity_id) is not None

    def cls(self, entity_id: int) -> str | None:
        if entity_id in self._classes:
            return self._classes[entity_id]
        if self.changes is not None and entity_id in self.changes.before:
            cls: str | None = self.changes.before[entity_id].cls
        else:
            entity = self._entity(entity_id)
            cls = entity.is_a() if entity is not None else None
        self._classes[entity_id] = cls
        return cls

    def is_a(self, entity_id: int, parent: str) -> bool:
        cls = self.cls(entity_id)
        return cls is not None and self.class_is_a(cls, parent)

    def class_is_a(self, cls: str, parent: str) -> bool:
        key = (cls, parent)
        found = self._subtype.get(key)
        if found is None:
            found = False
            try:
                declaration = self.schema.declaration_by_name(cls)
            except RuntimeError:
                declaration = None
            while declaration is not None:
                if declaration.name() == parent:
                    found = True
                    break
                declaration = declaration.supertype()
            self._subtype[key] = found
        return found

    def attribute_names(self, cls: str) -> dict[str, int]:
        names = self._attribute_index.get(cls)
        if names is None:
            declaration = self.schema.declaration_by_name(cls).as_entity()
            names = {a.name(): i for i, a in enumerate(declaration.all_attributes())}
            self._attribute_index[cls] = names
        return names

    def get(self, entity_id: int, name: str) -> Any:
        key = (entity_id, name)
        if key in self._memo:
            return self._memo[key]
        value = None
        if self.changes is not None and entity_id in self.changes.before:
            snapshot = self.changes.before[entity_id]
            index = self.attribute_names(snapshot.cls).get(name)
            value = snapshot.values[index] if index is not None else None
        else:
            entity = self._entity(entity_id)
            if entity is not None:
                index = self.attribute_names(entity.is_a()).get(name)
                value = _plain(entity[index]) if index is not None else None
        self._memo[key] = value
        return value

    def ids(self, entity_id: int, name: str) -> frozenset[int]:
        """The entities an attribute references, as a set (memoised: membership tests on big relationships)."""
        key = (entity_id, "#ids " + name)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = frozenset(_refs(self.get(entity_id, name)))
        return found

    def referrers(self, entity_id: int) -> list[int]:
        """Entities referencing this one (the view's own inverse references)."""
        entity = self._entity(entity_id)
        now = [r.id() for r in self.model.get_inverse(entity)] if entity is not None else []
        if self.changes is None:
            return now
        changes = self.changes
        kept = [r for r in now if r not in changes.created and r not in changes.before]
        return kept + sorted(self._index_before().get(entity_id, ()))

    def _index_before(self) -> dict[int, set[int]]:
        if self._referenced_before is None:
            index: dict[int, set[int]] = {}
            for referrer_id, snapshot in self.changes.before.items():  # type: ignore[union-attr]
                for target in _refs(snapshot.values):
                    index.setdefault(target, set()).add(referrer_id)
            self._referenced_before = index
        return self._referenced_before

    def label(self, entity_id: int | None) -> str | None:
        if entity_id is None or not self.exists(entity_id):
            return None
        name = self.get(entity_id, "Name")
        return f"{name} (#{entity_id})" if name else f"{self.cls(entity_id)} #{entity_id}"


def _plain(value: Any) -> Any:
    if isinstance(value, ifcopenshell.entity_instance):
        entity_id = value.id()
        return Ref(entity_id) if entity_id else _plain(value.wrappedValue)
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def _refs(value: Any) -> Iterable[int]:
    if isinstance(value, Ref):
        yield int(value)
    elif isinstance(value, tuple):
        for item in value:
            yield from _refs(item)


def _ids(value: Any) -> list[int]:
    return list(_refs(value))


def _text(value: Any) -> str:
    if isinstance(value, Ref):
        return repr(value)
    if isinstance(value, float):
        text = f"{value:.6g}"
    elif isinstance(value, tuple):
        text = "(" + ", ".join(_text(v) for v in value) + ")"
    else:
        text = str(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


# --- facets: what one element is, in one view ----------------------------------------------------------
class Facets:
    """Reads the facets of elements in one view: attributes, properties, type, container, material,
    placement (world position and rotation), shape summary and openings."""

    def __init__(self, view: ModelView, unit_scale: float) -> None:
        self.view = view
        self.unit_scale = unit_scale
        self._world: dict[int, list[list[float]] | None] = {}

    def of(self, element_id: int) -> dict[str, str]:
        view = self.view
        cls = view.cls(element_id)
        if cls is None:
            return {}
        out: dict[str, str] = {}
        for name, _index in view.attribute_names(cls).items():
            if name in _SKIPPED_ATTRIBUTES:
                continue
            value = view.get(element_id, name)
            if value is not None and not isinstance(value, Ref) and not _ids(value):
                out[f"attribute:{name}"] = _text(value)
        for rel_id in view.referrers(element_id):
            rel_cls = view.cls(rel_id) or ""
            if view.class_is_a(rel_cls, "IfcRelDefinesByProperties"):
                if element_id in view.ids(rel_id, "RelatedObjects"):
                    self._properties(view.get(rel_id, "RelatingPropertyDefinition"), out)
            elif view.class_is_a(rel_cls, "IfcRelDefinesByType"):
                if element_id in view.ids(rel_id, "RelatedObjects"):
                    out["type"] = view.label(view.get(rel_id, "RelatingType")) or "(none)"
            elif view.class_is_a(rel_cls, "IfcRelContainedInSpatialStructure"):
                if element_id in view.ids(rel_id, "RelatedElements"):
                    out["container"] = view.label(view.get(rel_id, "RelatingStructure")) or "(none)"
            elif view.class_is_a(rel_cls, "IfcRelAggregates") or view.class_is_a(rel_cls, "IfcRelNests"):
                if element_id in view.ids(rel_id, "RelatedObjects"):
                    out.setdefault("container", "part of " + (view.label(view.get(rel_id, "RelatingObject")) or "?"))
            elif view.class_is_a(rel_cls, "IfcRelAssociatesMaterial"):
                if element_id in view.ids(rel_id, "RelatedObjects"):
                    out["material"] = self._material(view.get(rel_id, "RelatingMaterial"))
            elif view.class_is_a(rel_cls, "IfcRelFillsElement"):
                if view.get(rel_id, "RelatingOpeningElement") == element_id:
                    filling = view.label(view.get(rel_id, "RelatedBuildingElement"))
                    out["openings"] = _join(out.get("openings"), f"filled by {filling}")
                elif view.get(rel_id, "RelatedBuildingElement") == element_id:
                    out["openings"] = _join(out.get("openings"), f"fills #{view.get(rel_id, 'RelatingOpeningElement')}")
            elif view.class_is_a(rel_cls, "IfcRelVoidsElement"):
                if view.get(rel_id, "RelatingBuildingElement") == element_id:
                    opening = view.get(rel_id, "RelatedOpeningElement")
                    out["openings"] = _join(out.get("openings"), f"#{opening}")
        for pset_id in _ids(view.get(element_id, "HasPropertySets")):
            self._properties(Ref(pset_id), out)
        if "openings" in out:
            listed = out["openings"].split(", ")
            out["openings"] = f"{len(listed)} ({', '.join(listed[:8])}{', …' if len(listed) > 8 else ''})"
        placement = view.get(element_id, "ObjectPlacement")
        if isinstance(placement, Ref):
            out["placement"] = self._describe_matrix(self.world_matrix(int(placement)))
        representation = view.get(element_id, "Representation")
        if isinstance(representation, Ref):
            out["shape"] = self._shape(int(representation))
        maps = _ids(view.get(element_id, "RepresentationMaps"))
        if maps:
            out["shape"] = "; ".join(self._shape_of_representation(r) for m in maps
                                     for r in _ids(view.get(m, "MappedRepresentation")))
        return out

    def _properties(self, definition: Any, out: dict[str, str]) -> None:
        view = self.view
        if not isinstance(definition, Ref) or not view.exists(int(definition)):
            return
        definition_id = int(definition)
        cls = view.cls(definition_id) or ""
        set_name = view.get(definition_id, "Name") or f"#{definition_id}"
        if view.class_is_a(cls, "IfcPropertySet"):
            for prop in _ids(view.get(definition_id, "HasProperties")):
                name = view.get(prop, "Name")
                out[f"property:{set_name}.{name}"] = self._property_value(prop)
        elif view.class_is_a(cls, "IfcElementQuantity"):
            for quantity in _ids(view.get(definition_id, "Quantities")):
                name = view.get(quantity, "Name")
                quantity_cls = view.cls(quantity) or ""
                names = view.attribute_names(quantity_cls)
                value_name = next((n for n in names if n.endswith("Value")), None)
                value = view.get(quantity, value_name) if value_name else quantity_cls
                out[f"quantity:{set_name}.{name}"] = _text(value)

    def _property_value(self, prop: int) -> str:
        view = self.view
        cls = view.cls(prop) or ""
        if view.class_is_a(cls, "IfcPropertySingleValue"):
            value = view.get(prop, "NominalValue")
            return "(empty)" if value is None else _text(value)
        if view.class_is_a(cls, "IfcPropertyEnumeratedValue"):
            return _text(view.get(prop, "EnumerationValues"))
        if view.class_is_a(cls, "IfcPropertyListValue"):
            return _text(view.get(prop, "ListValues"))
        if view.class_is_a(cls, "IfcPropertyBoundedValue"):
            return f"{_text(view.get(prop, 'LowerBoundValue'))}..{_text(view.get(prop, 'UpperBoundValue'))}"
        return cls

    def _material(self, material: Any) -> str:
        view = self.view
        if not isinstance(material, Ref):
            return "(none)"
        material_id = int(material)
        cls = view.cls(material_id) or ""
        if view.class_is_a(cls, "IfcMaterialLayerSetUsage"):
            return "layer set usage of " + self._material(view.get(material_id, "ForLayerSet"))
        for name_attribute in ("Name", "LayerSetName"):
            if name_attribute in view.attribute_names(cls):
                name = view.get(material_id, name_attribute)
                if name:
                    return f"{name} (#{material_id})"
        return f"{cls} #{material_id}"

    # --- placement -----------------------------------------------------------------------------------
    def local_matrix(self, placement: int) -> list[list[float]] | None:
        view = self.view
        if not view.is_a(placement, "IfcLocalPlacement"):
            return None
        relative = view.get(placement, "RelativePlacement")
        if not isinstance(relative, Ref):
            return _identity()
        return self._axis_matrix(int(relative))

    def world_matrix(self, placement: int, depth: int = 0) -> list[list[float]] | None:
        if placement in self._world:
            return self._world[placement]
        local = self.local_matrix(placement)
        parent = self.view.get(placement, "PlacementRelTo")
        if local is None or depth > 32:
            world = None
        elif isinstance(parent, Ref):
            parent_world = self.world_matrix(int(parent), depth + 1)
            world = _multiply(parent_world, local) if parent_world is not None else None
        else:
            world = local
        self._world[placement] = world  # placements are shared: storeys and hosts are walked once
        return world

    def _axis_matrix(self, axis_placement: int) -> list[list[float]]:
        view = self.view
        location = view.get(axis_placement, "Location")
        point = view.get(int(location), "Coordinates") if isinstance(location, Ref) else (0.0, 0.0, 0.0)
        point = tuple(point or ()) + (0.0,) * (3 - len(point or ()))
        z_axis = self._direction(view.get(axis_placement, "Axis"), (0.0, 0.0, 1.0)) \
            if "Axis" in view.attribute_names(view.cls(axis_placement) or "") else (0.0, 0.0, 1.0)
        x_axis = self._direction(view.get(axis_placement, "RefDirection"), (1.0, 0.0, 0.0))
        dot = sum(a * b for a, b in zip(x_axis, z_axis, strict=True))
        x_axis = _normalised(tuple(a - dot * b for a, b in zip(x_axis, z_axis, strict=True)))
        y_axis = (z_axis[1] * x_axis[2] - z_axis[2] * x_axis[1], z_axis[2] * x_axis[0] - z_axis[0] * x_axis[2],
                  z_axis[0] * x_axis[1] - z_axis[1] * x_axis[0])
        return [[x_axis[i], y_axis[i], z_axis[i], float(point[i])] for i in range(3)] + [[0.0, 0.0, 0.0, 1.0]]

    def _direction(self, ref: Any, default: tuple[float, float, float]) -> tuple[float, float, float]:
        if not isinstance(ref, Ref):
            return default
        ratios = tuple(self.view.get(int(ref), "DirectionRatios") or ())
        ratios = ratios + (0.0,) * (3 - len(ratios))
        return _normalised(ratios[:3]) if any(ratios) else default

    def _describe_matrix(self, matrix: list[list[float]] | None) -> str:
        if matrix is None:
            return "(not a local placement)"
        x, y, z = (matrix[i][3] * self.unit_scale for i in range(3))
        rotation = math.degrees(math.atan2(matrix[1][0], matrix[0][0]))
        rotation = 0.0 if abs(rotation) < 0.005 else rotation
        return f"x {_metres(x)}, y {_metres(y)}, z {_metres(z)} m, rotation {rotation:.1f}°"

    # --- shape ---------------------------------------------------------------------------------------
    def _shape(self, product_shape: int) -> str:
        parts = [self._shape_of_representation(r) for r in _ids(self.view.get(product_shape, "Representations"))]
        return "; ".join(parts) if parts else "(no representation)"

    def _shape_of_representation(self, representation: int) -> str:
        view = self.view
        identifier = view.get(representation, "RepresentationIdentifier") or "?"
        items = _ids(view.get(representation, "Items"))
        described = [self._item(i, 0) for i in items[:2]]
        more = f" +{len(items) - 2} items" if len(items) > 2 else ""
        return f"{identifier}: {', '.join(described)}{more}"

    def _item(self, item: int, depth: int) -> str:
        view = self.view
        cls = view.cls(item) or "?"
        if depth > 3:
            return cls
        if view.class_is_a(cls, "IfcExtrudedAreaSolid"):
            depth_value = view.get(item, "Depth")
            profile = view.get(item, "SweptArea")
            profile_text = self._profile(int(profile)) if isinstance(profile, Ref) else "?"
            return f"extrusion {_metres(float(depth_value or 0) * self.unit_scale)} m of {profile_text}"
        if view.class_is_a(cls, "IfcBooleanResult"):
            first, second = view.get(item, "FirstOperand"), view.get(item, "SecondOperand")
            first_text = self._item(int(first), depth + 1) if isinstance(first, Ref) else "?"
            second_cls = view.cls(int(second)) if isinstance(second, Ref) else "?"
            return f"{first_text} {str(view.get(item, 'Operator') or '').lower()} {second_cls}"
        if view.class_is_a(cls, "IfcMappedItem"):
            source = view.get(item, "MappingSource")
            return f"type shape #{source}" if isinstance(source, Ref) else cls
        if view.class_is_a(cls, "IfcPolyline"):
            return f"polyline of {len(_ids(view.get(item, 'Points')))} points"
        if view.class_is_a(cls, "IfcFacetedBrep") or view.class_is_a(cls, "IfcPolygonalFaceSet"):
            return cls
        return cls

    def _profile(self, profile: int) -> str:
        view = self.view
        cls = view.cls(profile) or "?"
        if view.class_is_a(cls, "IfcRectangleProfileDef"):
            x_dim, y_dim = view.get(profile, "XDim"), view.get(profile, "YDim")
            return f"rectangle {_metres(float(x_dim or 0) * self.unit_scale)} x " \
                   f"{_metres(float(y_dim or 0) * self.unit_scale)} m"
        if view.class_is_a(cls, "IfcArbitraryClosedProfileDef"):
            curve = view.get(profile, "OuterCurve")
            if isinstance(curve, Ref) and view.is_a(int(curve), "IfcPolyline"):
                points = _ids(view.get(int(curve), "Points"))
                coordinates = [view.get(p, "Coordinates") or () for p in points]
                xs = [float(c[0]) for c in coordinates if c]
                ys = [float(c[1]) for c in coordinates if len(c) > 1]
                if xs and ys:
                    return (f"outline of {len(points)} points, {_metres((max(xs) - min(xs)) * self.unit_scale)} x "
                            f"{_metres((max(ys) - min(ys)) * self.unit_scale)} m")
            return "outline"
        if view.class_is_a(cls, "IfcCircleProfileDef"):
            return f"circle r {_metres(float(view.get(profile, 'Radius') or 0) * self.unit_scale)} m"
        return cls


def _join(current: str | None, item: str) -> str:
    return f"{current}, {item}" if current else item


def _metres(value: float) -> str:
    text = f"{value:.3f}"
    return "0.000" if text == "-0.000" else text


def _identity() -> list[list[float]]:
    return [[1.0 if i == j else 0.0 for j in range(4)] for i in range(4)]


def _multiply(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    """The matrix product a @ b (4 x 4)."""
    return [[sum(a_row[k] * b[k][j] for k in range(4)) for j in range(4)] for a_row in a]


def _normalised(vector: tuple[float, ...]) -> tuple[float, float, float]:
    length = math.sqrt(sum(v * v for v in vector)) or 1.0
    return (vector[0] / length, vector[1] / length, vector[2] / length)


# --- classification and the report ----------------------------------------------------------------------
_FACET_ORDER = ("placement", "shape", "openings", "type", "container", "attribute:", "property:", "quantity:",
                "material")


class ChangeDetails:
    """Classifies modified elements and works out old → new values for a sample of them."""

    def __init__(self, model: ifcopenshell.file, changes: ChangeSet) -> None:
        self.changes = changes
        self.before = ModelView(model, changes)
        self.now = ModelView(model)
        try:
            scale = float(ifcopenshell.util.unit.calculate_unit_scale(model))
        except Exception:  # a model without usable units: show its own numbers
            scale = 1.0
        self.before_facets = Facets(self.before, scale)
        self.now_facets = Facets(self.now, scale)
        self.touched = frozenset(changes.before) | changes.created
        self.geometric = frozenset(changes.geometry)
        self.related = self._related_to_touched()

    def _related_to_touched(self) -> frozenset[int]:
        """Elements a touched relationship linked (before or now), and owners of touched property data:
        only these can have changed a type, container, material, opening or property set."""
        found: set[int] = set()
        for entity_id in self.touched:
            for view in (self.before, self.now):
                cls = view.cls(entity_id)
                if cls is None:
                    continue
                if view.class_is_a(cls, "IfcRelationship"):
                    for name in view.attribute_names(cls):
                        if name.startswith("Relat"):
                            found.update(_ids(view.get(entity_id, name)))
                elif any(view.class_is_a(cls, c) for c in _PROPERTY_CLASSES):
                    found.update(self._property_owners(view, entity_id))
        return frozenset(found)

    def _property_owners(self, view: ModelView, entity_id: int) -> set[int]:
        owners: set[int] = set()
        frontier, seen = [entity_id], {entity_id}
        for _ in range(4):  # property -> (complex property ->) set -> defining relationship or type
            next_frontier = []
            for current in frontier:
                for referrer in view.referrers(current):
                    if referrer in seen:
                        continue
                    seen.add(referrer)
                    cls = view.cls(referrer) or ""
                    if view.class_is_a(cls, "IfcRelDefinesByProperties"):
                        owners.update(_ids(view.get(referrer, "RelatedObjects")))
                    elif view.class_is_a(cls, "IfcTypeObject"):
                        owners.add(referrer)
                    elif not view.class_is_a(cls, "IfcRelationship"):
                        next_frontier.append(referrer)
            frontier = next_frontier
        return owners

    # --- cheap: which kinds of things changed on one modified element --------------------------------
    def kinds(self, element_id: int, geometric: bool) -> tuple[str, ...]:
        found: set[str] = set()
        before, now = self.before, self.now
        snapshot = self.changes.before.get(element_id)
        if snapshot is not None:
            for name, index in now.attribute_names(snapshot.cls).items():
                if name == "ObjectPlacement" or snapshot.values[index] == now.get(element_id, name):
                    continue
                if name in ("Representation", "RepresentationMaps"):
                    found.add("shape")
                elif name == "HasPropertySets":
                    found.add("properties")
                else:
                    found.add("attributes")
        if geometric:  # the recorder saw its placement or shape change (or something they depend on)
            moved = self._moved(element_id)
            if moved:
                found.add(moved)
            if "shape" not in found and self._shape_touched(element_id):
                found.add("shape")
        if element_id in self.related:
            for pset in set(_ids(before.get(element_id, "HasPropertySets"))) | \
                    set(_ids(now.get(element_id, "HasPropertySets"))):
                if self._definition_touched(pset):
                    found.add("properties")
            for rel_id in set(before.referrers(element_id)) | set(now.referrers(element_id)):
                kind = self._relationship_kind(rel_id, element_id)
                if kind:
                    found.add(kind)
        if geometric and not found & {"placement", "rebased", "shape", "openings"}:
            found.add("followed")
        if not found:
            found.add("linked" if self.changes.causes.get(element_id) is not None else "other")
        return tuple(k for k in KINDS if k in found)

    def via(self, element_id: int) -> str | None:
        """The entity whose change reached a "linked" element, as `IfcClass #id`."""
        cause = self.changes.causes.get(element_id)
        if cause is None:
            return None
        return f"{self.now.cls(cause) or self.before.cls(cause) or 'entity'} #{cause}"

    def _own_attribute_changes(self, element_id: int, listed: set[str]) -> list[dict[str, Any]]:
        """Attributes of the element itself that changed and that no facet shows (references, GlobalId)."""
        snapshot = self.changes.before.get(element_id)
        if snapshot is None or element_id in self.changes.created:
            return []
        out = []
        for name, index in self.now.attribute_names(snapshot.cls).items():
            key = f"attribute:{name}"
            if key in listed or name in _FACET_ATTRIBUTES:
                continue
            old, new = snapshot.values[index], self.now.get(element_id, name)
            if old != new:
                out.append({"key": key, "old": None if old is None else _text(old),
                            "new": None if new is None else _text(new)})
        return out

    def _linked_change(self, element_id: int) -> dict[str, Any] | None:
        """old → new of the entity whose change reached the element: its attributes that differ."""
        cause = self.changes.causes.get(element_id)
        if cause is None:
            return None
        key = f"linked:{self.via(element_id)}"
        if cause in self.changes.created:
            return {"key": key, "old": None, "new": "created"}
        snapshot = self.changes.before.get(cause)
        if snapshot is None:
            return None
        if not self.now.exists(cause):
            return {"key": key, "old": "existed", "new": None}
        old_parts, new_parts = [], []
        for name, index in self.now.attribute_names(snapshot.cls).items():
            old, new = snapshot.values[index], self.now.get(cause, name)
            if old != new:
                old_parts.append(f"{name} {_text(old) if old is not None else '(none)'}")
                new_parts.append(f"{name} {_text(new) if new is not None else '(none)'}")
        return {"key": key, "old": _text("; ".join(old_parts)), "new": _text("; ".join(new_parts))}

    def _moved(self, element_id: int) -> str | None:
        """"placement" when the element's own placement moved it; "rebased" when its own placement changed
        but its position did not (an API keeping hosted elements in place when their host moves)."""
        old = self.before.get(element_id, "ObjectPlacement")
        new = self.now.get(element_id, "ObjectPlacement")
        if old is None and new is None:
            return None
        if (old is None) != (new is None):
            return "placement"
        if int(old) not in self.touched and int(new) not in self.touched and old == new:
            relative = self.now.get(int(new), "RelativePlacement")
            if not isinstance(relative, Ref) or not self._subtree_touched(int(relative), 2):
                return None
        if _rounded(self.before_facets.local_matrix(int(old))) == _rounded(self.now_facets.local_matrix(int(new))):
            return None
        world_before = _rounded(self.before_facets.world_matrix(int(old)))
        return "placement" if world_before != _rounded(self.now_facets.world_matrix(int(new))) else "rebased"

    def _subtree_touched(self, entity_id: int, depth: int) -> bool:
        if entity_id in self.touched:
            return True
        if depth == 0:
            return False
        view = self.now
        cls = view.cls(entity_id)
        if cls is None:
            return False
        for name in view.attribute_names(cls):
            for child in _ids(view.get(entity_id, name)):
                if self._subtree_touched(child, depth - 1):
                    return True
        return False

    def _shape_touched(self, element_id: int) -> bool:
        for view in (self.before, self.now):
            shape = view.get(element_id, "Representation")
            roots = [int(shape)] if isinstance(shape, Ref) else _ids(view.get(element_id, "RepresentationMaps"))
            for root in roots:
                if root in self.touched:
                    return True
                for name in ("Representations", "MappedRepresentation"):
                    for representation in _ids(view.get(root, name)) if name in view.attribute_names(
                            view.cls(root) or "IfcRoot") else ():
                        if representation in self.touched or any(
                                i in self.touched for i in _ids(view.get(representation, "Items"))):
                            return True
        return False

    def _definition_touched(self, definition: int) -> bool:
        if definition in self.touched:
            return True
        for view in (self.before, self.now):
            cls = view.cls(definition)
            if cls is None:
                continue
            names = view.attribute_names(cls)
            for name in ("HasProperties", "Quantities"):
                if name in names and any(p in self.touched for p in _ids(view.get(definition, name))):
                    return True
        return False

    def _relationship_kind(self, rel_id: int, element_id: int) -> str | None:
        cls = self.now.cls(rel_id) or self.before.cls(rel_id) or ""
        kind = next((k for rel_cls, k in _REL_KINDS if self.now.class_is_a(cls, rel_cls)), "relationships")
        if rel_id not in self.touched:
            if kind == "properties":
                definition = self.now.get(rel_id, "RelatingPropertyDefinition")
                return kind if isinstance(definition, Ref) and self._definition_touched(int(definition)) else None
            if kind == "material":
                material = self.now.get(rel_id, "RelatingMaterial")
                return kind if isinstance(material, Ref) and int(material) in self.touched else None
            return None
        if kind in ("openings", "relationships"):
            return kind
        related = {"container": "RelatedElements" if self.now.class_is_a(cls, "IfcRelContainedInSpatialStructure")
                   else "RelatedObjects"}.get(kind, "RelatedObjects")
        relating = next((n for n in self.now.attribute_names(cls) if n.startswith("Relating")), None)
        was = element_id in self.before.ids(rel_id, related) if self.before.exists(rel_id) else False
        now = element_id in self.now.ids(rel_id, related) if self.now.exists(rel_id) else False
        if was != now:
            return kind
        if not was:
            return None  # the element is on the relating side (a storey gaining members is not changed)
        if relating and self.before.get(rel_id, relating) != self.now.get(rel_id, relating):
            return kind
        if kind == "properties":
            definition = self.now.get(rel_id, "RelatingPropertyDefinition")
            return kind if isinstance(definition, Ref) and self._definition_touched(int(definition)) else None
        return None

    # --- dear: old → new values of one element -------------------------------------------------------
    def element(self, element_id: int, status: str, kinds: tuple[str, ...] = ()) -> dict[str, Any]:
        old = self.before_facets.of(element_id) if status != "added" else {}
        new = self.now_facets.of(element_id) if status != "deleted" else {}
        view = self.now if status != "deleted" else self.before
        keys = sorted(set(old) | set(new), key=_facet_sort_key)
        changes = [{"key": key, "old": old.get(key), "new": new.get(key)} for key in keys
                   if old.get(key) != new.get(key)]
        if status == "modified":
            changes += self._own_attribute_changes(element_id, {c["key"] for c in changes})
            if not changes or set(kinds) & {"linked", "other"}:
                linked = self._linked_change(element_id)
                if linked is not None:
                    changes.append(linked)
        info: dict[str, Any] = {"id": element_id, "status": status, "class": view.cls(element_id),
                                "name": view.get(element_id, "Name"), "changes": changes}
        tag = view.get(element_id, "Tag") if "Tag" in view.attribute_names(view.cls(element_id) or "IfcRoot") else None
        if tag:
            info["tag"] = tag
        if kinds:
            info["kinds"] = list(kinds)
        return info


def describe_changes(model: ifcopenshell.file, changes: ChangeSet) -> dict[str, Any]:
    """change_details of an execute_result: modified elements grouped by what changed, and old → new
    values for the first elements of each group, the first added and the first deleted ones."""
    try:
        return _describe(model, changes)
    except Exception as exc:  # the change itself stands; only its itemisation is lost
        return {"groups": [], "elements": [], "error": f"{type(exc).__name__}: {exc}",
                "counts": {"added": len(changes.added), "modified": len(changes.modified),
                           "deleted": len(changes.deleted)}}


def _describe(model: ifcopenshell.file, changes: ChangeSet) -> dict[str, Any]:
    details = ChangeDetails(model, changes)
    geometric = set(changes.geometry)
    grouped: dict[tuple[str, ...], list[int]] = {}
    for element_id in changes.modified:
        grouped.setdefault(details.kinds(element_id, element_id in geometric), []).append(element_id)
    ordered = sorted(grouped.items(), key=lambda item: (KINDS.index(item[0][0]), -len(item[1]), item[0]))
    groups = []
    for kinds, members in ordered:
        classes: dict[str, int] = {}
        for element_id in members:
            cls = details.now.cls(element_id) or "?"
            classes[cls] = classes.get(cls, 0) + 1
        group = {"kinds": list(kinds), "count": len(members), "classes": classes, "ids": members[:MAX_GROUP_IDS]}
        if set(kinds) & {"linked", "other"}:
            via = list(dict.fromkeys(v for v in (details.via(i) for i in members) if v))
            group["via"] = via[:MAX_VIA] + ([f"{len(via) - MAX_VIA} more"] if len(via) > MAX_VIA else [])
        groups.append(group)
    shown: list[dict[str, Any]] = []
    for round_number in range(MAX_MODIFIED_SHOWN):  # the first elements of every group, in turn
        for kinds, members in ordered:
            if round_number < len(members) and len(shown) < MAX_MODIFIED_SHOWN:
                shown.append(details.element(members[round_number], "modified", kinds))
    shown.sort(key=lambda e: next(i for i, (k, _m) in enumerate(ordered) if tuple(e["kinds"]) == k))
    shown += [details.element(i, "added") for i in changes.added[:MAX_ADDED_SHOWN]]
    shown += [details.element(i, "deleted") for i in changes.deleted[:MAX_DELETED_SHOWN]]
    return {"groups": groups, "elements": shown,
            "counts": {"added": len(changes.added), "modified": len(changes.modified),
                       "deleted": len(changes.deleted)}}


def _facet_sort_key(key: str) -> tuple[int, str]:
    return next((i for i, prefix in enumerate(_FACET_ORDER) if key.startswith(prefix)), len(_FACET_ORDER)), key


def _rounded(matrix: list[list[float]] | None) -> tuple[float, ...] | None:
    if matrix is None:
        return None
    return tuple(round(v, 6) + 0.0 for row in matrix[:3] for v in row)
