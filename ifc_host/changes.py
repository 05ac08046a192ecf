"""Element-level change tracking for one script run: exact added / modified / deleted sets of IFC elements.

The recorder plugs into the hook IfcOpenShell already calls on every mutation (the `transaction` slot of
a file: `store_create`, `store_edit`, `store_delete`), but unlike IfcOpenShell's own undo log it keeps no
values, only the ids of touched entities (plus, for relationships, which entities they linked when first
touched). At the end each touched entity is mapped to the elements it belongs to by walking up inverse
references. An "element" is an IfcProduct, an IfcTypeProduct (the nearest analogue of a Revit element) or the
project itself (IfcContext: its name, description, phase).

The recorder runs in the script's own process, so the script can switch it off (`model.transaction = None`).
What decides is `changes_between`: the same mapping from entities to elements, fed by comparing the model
the script's process wrote with the committed one, entity by entity (see ifc_host/model_diff.py); only values
that really differ count, so writing a value back unchanged changes nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import ifcopenshell
import ifcopenshell.util.element

from ifc_host.spatial import storey_labels, storey_of

OWNER, RELATIONSHIP, RESOURCE, BOUNDARY = "owner", "relationship", "resource", "boundary"

OWNER_CLASSES = ("IfcProduct", "IfcTypeProduct", "IfcProject", "IfcContext")  # IfcContext is IFC4's
# Shared infrastructure referenced by (nearly) everything: touching it does not change any one element.
BOUNDARY_CLASSES = (
    "IfcOwnerHistory", "IfcRepresentationContext", "IfcUnitAssignment", "IfcNamedUnit", "IfcApplication",
    "IfcPerson", "IfcOrganization", "IfcPersonAndOrganization",
)
# Relationships that group, type or describe their related objects. A change of membership affects only
# the members that joined or left; a change of the relating side affects all members; the relating side
# itself (a storey, a group, a type) is not changed by gaining or losing members.
GROUPING_RELATIONSHIPS = (
    "IfcRelDefines", "IfcRelAssociates", "IfcRelAssigns", "IfcRelDeclares", "IfcRelAggregates", "IfcRelNests",
    "IfcRelContainedInSpatialStructure", "IfcRelReferencedInSpatialStructure", "IfcRelServicesBuildings",
)
# Relationships whose relating side is data about the related objects (a property set, a material).
DEFINING_RELATIONSHIPS = ("IfcRelDefines", "IfcRelAssociates")
GEOMETRIC_RELATIONSHIPS = ("IfcRelVoidsElement", "IfcRelFillsElement", "IfcRelProjectsElement")
GEOMETRIC_RESOURCES = (
    "IfcObjectPlacement", "IfcProductRepresentation", "IfcRepresentation", "IfcRepresentationItem",
    "IfcRepresentationMap", "IfcProfileDef",
)
GEOMETRIC_ATTRIBUTES = frozenset({"ObjectPlacement", "Representation", "RepresentationMaps"})


class Ref(int):
    """A reference to another entity (by STEP id) inside a snapshot of attribute values."""

    def __repr__(self) -> str:
        return f"#{int(self)}"

    __str__ = int.__repr__


@dataclass(frozen=True)
class Snapshot:
    """An entity's class and attribute values (references as Ref, wrapped values unwrapped)."""

    cls: str
    values: tuple[Any, ...]


def plain_value(value: Any) -> Any:
    if isinstance(value, ifcopenshell.entity_instance):
        entity_id = value.id()
        return Ref(entity_id) if entity_id else plain_value(value.wrappedValue)
    if isinstance(value, (tuple, list)):
        return tuple(plain_value(v) for v in value)
    return value


def snapshot_of(entity: ifcopenshell.entity_instance) -> Snapshot:
    return Snapshot(entity.is_a(), tuple(plain_value(entity[i]) for i in range(len(entity))))


@dataclass
class ChangeSet:
    added: list[int] = field(default_factory=list)
    modified: list[int] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    geometry: list[int] = field(default_factory=list)  # elements whose shape or placement changed
    deleted_info: dict[int, dict[str, Any]] = field(default_factory=dict)
    # What the "before" side of a change report needs: attribute values of every pre-existing entity the
    # run touched, as they were just before its first change, and the ids of the entities the run created.
    before: dict[int, Snapshot] = field(default_factory=dict)
    created: frozenset[int] = frozenset()
    edited: frozenset[int] = frozenset()  # pre-existing entities the run edited and that still exist
    details: dict[str, Any] = field(default_factory=dict)  # before → after (ifc_host.change_details)
    # For an element modified through something else (a material layer, a classification reference): one
    # entity whose change reached it, so the report can name what changed.
    causes: dict[int, int] = field(default_factory=dict)

    def as_contract(self) -> dict[str, list[int]]:
        return {"added": list(self.added), "modified": list(self.modified), "deleted": list(self.deleted)}

    @property
    def empty(self) -> bool:
        return not (self.added or self.modified or self.deleted)


@dataclass(frozen=True)
class _RelationshipSnapshot:
    """What a relationship linked when the run first touched it (nothing, if the run created it)."""

    relating: frozenset[int]
    related: frozenset[int]
    grouping: bool
    shapes: bool


class _ClassKinds:
    """Per-class answers (kind, geometric?, attribute names), computed once per IFC class."""

    def __init__(self) -> None:
        self._kind: dict[str, str] = {}
        self._flags: dict[tuple[str, str], bool] = {}
        self._names: dict[str, tuple[str, ...]] = {}

    def kind(self, entity: ifcopenshell.entity_instance) -> str:
        cls = entity.is_a()
        kind = self._kind.get(cls)
        if kind is None:
            if any(entity.is_a(c) for c in OWNER_CLASSES):
                kind = OWNER
            elif entity.is_a("IfcRelationship"):
                kind = RELATIONSHIP
            elif any(entity.is_a(c) for c in BOUNDARY_CLASSES):
                kind = BOUNDARY
            else:
                kind = RESOURCE
            self._kind[cls] = kind
        return kind

    def is_a_any(self, entity: ifcopenshell.entity_instance, group: str, classes: tuple[str, ...]) -> bool:
        key = (entity.is_a(), group)
        flag = self._flags.get(key)
        if flag is None:
            flag = self._flags[key] = any(entity.is_a(c) for c in classes)
        return flag

    def attribute_names(self, entity: ifcopenshell.entity_instance) -> tuple[str, ...]:
        cls = entity.is_a()
        names = self._names.get(cls)
        if names is None:
            names = self._names[cls] = tuple(entity.attribute_name(i) for i in range(len(entity)))
        return names


def _entity_ids(value: Any) -> set[int]:
    if isinstance(value, ifcopenshell.entity_instance):
        return {value.id()} if value.id() else set()
    if isinstance(value, (tuple, list)):
        out: set[int] = set()
        for item in value:
            out |= _entity_ids(item)
        return out
    return set()


def describe_element(element: ifcopenshell.entity_instance, storey_names: dict[int, str]) -> dict[str, Any]:
    """class, type name, storey (as views name it: `storey_names` is spatial.storey_labels of the element's model),
    GlobalId and Name of an element, as the change report shows them."""
    element_type = None if element.is_a("IfcTypeObject") else ifcopenshell.util.element.get_type(element)
    storey = storey_of(element)
    return {
        "class": element.is_a(),
        "type": (element_type.Name or f"#{element_type.id()}") if element_type is not None else None,
        "storey": (storey_names.get(storey.id()) or f"#{storey.id()}") if storey is not None else None,
        "global_id": getattr(element, "GlobalId", None),
        "name": getattr(element, "Name", None),
    }


class _ElementMapping:
    """What a run did to entities (created, deleted, touched with their kinds and earlier values), mapped
    by `finish()` to the elements it changed. `model` is the model after the run."""

    def __init__(self, model: ifcopenshell.file) -> None:
        self.model = model
        self._kinds = _ClassKinds()
        self._initial_max_id = model.get_max_id()
        self._created: set[int] = set()
        self._deleted: set[int] = set()
        self._touched: dict[int, str] = {}
        self._geometric_owners: set[int] = set()
        self._snapshots: dict[int, _RelationshipSnapshot] = {}
        self._deleted_info: dict[int, dict[str, Any]] = {}
        self._deleted_products: set[int] = set()
        # Where elements were before the run, learned from relationship snapshots (the API often unlinks an
        # element from its storey and type before removing it, so they cannot be read at deletion).
        self._original_storey: dict[int, str] = {}
        self._storey_labels: dict[int, str] | None = None
        self._original_type: dict[int, str] = {}
        self._original_parent: dict[int, int] = {}
        self._before: dict[int, Snapshot] = {}
        self.counts = {"created": 0, "edited": 0, "deleted": 0}

    # --- bookkeeping --------------------------------------------------------------------------------
    def _touch(self, element: ifcopenshell.entity_instance, element_id: int) -> str:
        kind = self._touched.get(element_id)
        if kind is None:
            kind = self._touched[element_id] = self._kinds.kind(element)
            if element_id <= self._initial_max_id:  # hooks run before the change: these are the old values
                self._before[element_id] = snapshot_of(element)
            if kind == RELATIONSHIP:
                self._snapshot(element, element_id)
        return kind

    def _relationship_sides(self, rel: ifcopenshell.entity_instance) -> tuple[set[int], set[int]]:
        relating: set[int] = set()
        related: set[int] = set()
        for name in self._kinds.attribute_names(rel):
            if name.startswith("Relating"):
                relating |= _entity_ids(getattr(rel, name))
            elif name.startswith("Related"):
                related |= _entity_ids(getattr(rel, name))
        return relating, related

    def _snapshot(self, rel: ifcopenshell.entity_instance, rel_id: int) -> None:
        relating, related = self._relationship_sides(rel)
        self._snapshots[rel_id] = _RelationshipSnapshot(frozenset(relating), frozenset(related), *self._rel_flags(rel))
        if rel_id > self._initial_max_id:
            return
        target = self._relating_entity(rel)
        if target is None:
            return
        label = getattr(target, "Name", None) or f"#{target.id()}"
        if rel.is_a("IfcRelContainedInSpatialStructure"):
            storey = storey_of(target)
            if storey is not None:
                storey_label = self._storey_label(storey)
                for element_id in related:
                    self._original_storey.setdefault(element_id, storey_label)
        elif rel.is_a("IfcRelDefinesByType"):
            for element_id in related:
                self._original_type.setdefault(element_id, label)
        elif rel.is_a("IfcRelAggregates") or rel.is_a("IfcRelNests"):
            for element_id in related:
                self._original_parent.setdefault(element_id, target.id())

    def _rel_flags(self, rel: ifcopenshell.entity_instance) -> tuple[bool, bool]:
        return (self._kinds.is_a_any(rel, "grouping", GROUPING_RELATIONSHIPS),
                self._kinds.is_a_any(rel, "shapes", GEOMETRIC_RELATIONSHIPS))

    def _relating_entity(self, rel: ifcopenshell.entity_instance) -> ifcopenshell.entity_instance | None:
        for name in self._kinds.attribute_names(rel):
            if name.startswith("Relating"):
                value = getattr(rel, name)
                if isinstance(value, ifcopenshell.entity_instance):
                    return value
        return None

    def _describe_deleted(self, element: ifcopenshell.entity_instance) -> dict[str, Any]:
        info = describe_element(element, self._storey_names())
        element_id = element.id()
        info["type"] = self._original_type.get(element_id, info["type"])
        storey = self._original_storey.get(element_id)
        if storey is None and element_id in self._original_parent:
            parent = self._alive(self._original_parent[element_id])
            found = storey_of(parent) if parent is not None else None
            storey = self._storey_label(found) if found is not None else None
        if storey is not None:  # else its own storey, as describe_element found it
            info["storey"] = storey
        return info

    def _storey_names(self) -> dict[int, str]:
        """The storeys as views name them (#<step id> when a Name is shared or empty), read once per run."""
        if self._storey_labels is None:
            self._storey_labels = storey_labels(self.model)
        return self._storey_labels

    def _storey_label(self, storey: ifcopenshell.entity_instance) -> str:
        return self._storey_names().get(storey.id()) or f"#{storey.id()}"

    def _alive(self, element_id: int) -> ifcopenshell.entity_instance | None:
        if element_id in self._deleted:
            return None
        try:
            return self.model.by_id(element_id)
        except RuntimeError:
            return None

    # --- the result ------------------------------------------------------------------------------------
    @property
    def touched_anything(self) -> bool:
        return any(self.counts.values())

    def records_touched(self) -> tuple[set[int], set[int]]:
        """The entities the run created or touched that exist after it, and those it deleted that existed
        before it: where the model written for commit should differ from the committed one (a guess: the
        script may have gone round the recorder; see trusted_report.ReportAhead)."""
        alive = (set(self._touched) | self._created) - self._deleted
        return alive, self._deleted - self._created

    def finish(self) -> ChangeSet:
        created_alive = {i for i in self._created if i not in self._deleted}
        added = {i for i in created_alive if self._touched.get(i) == OWNER}
        deleted = {i for i in self._deleted if i in self._deleted_info}
        modified: set[int] = set()
        geometric = set(self._geometric_owners)
        walk_cache: dict[int, frozenset[int]] = {}
        causes: dict[int, int] = {}
        for element_id, kind in self._touched.items():
            if element_id in self._deleted and kind != RELATIONSHIP:
                continue
            if kind == OWNER:
                modified.add(element_id)
            elif kind == RELATIONSHIP:
                owners, shapes = self._relationship_effect(element_id)
                modified |= owners
                for owner in owners:
                    causes.setdefault(owner, element_id)
                if shapes:
                    geometric |= owners
            elif kind == RESOURCE:
                entity = self._alive(element_id)
                if entity is None:
                    continue
                owners = self._owners_above(entity, walk_cache)
                modified |= owners
                for owner in owners:
                    causes.setdefault(owner, element_id)
                if self._kinds.is_a_any(entity, "geometric", GEOMETRIC_RESOURCES):
                    geometric |= owners
        modified -= added
        modified -= self._deleted
        modified -= self._created
        products = {i for i in added if self._is_product(i)} | (deleted & self._deleted_products)
        geometric = (geometric & modified) | products
        return ChangeSet(
            added=sorted(added), modified=sorted(modified), deleted=sorted(deleted), geometry=sorted(geometric),
            deleted_info={i: self._deleted_info[i] for i in sorted(deleted)},
            before=self._before, created=frozenset(self._created),
            edited=frozenset(i for i in self._before if i not in self._deleted),
            causes={i: c for i, c in causes.items() if i in modified},
        )

    def _is_product(self, element_id: int) -> bool:
        entity = self._alive(element_id)
        return entity is not None and entity.is_a("IfcProduct")

    def _relationship_effect(self, rel_id: int) -> tuple[set[int], bool]:
        """The elements a touched relationship changed, and whether the change is geometric."""
        before = self._snapshots[rel_id]
        rel = self._alive(rel_id)
        relating, related = self._relationship_sides(rel) if rel is not None else (set(), set())
        if before.grouping:
            affected = set(before.related.symmetric_difference(related))
            if before.relating != frozenset(relating):
                affected |= before.related | related
        else:
            affected = set(before.relating | before.related | relating | related)
        return {i for i in affected if self._is_owner_id(i)}, before.shapes

    def _is_owner_id(self, element_id: int) -> bool:
        if element_id in self._deleted_info:
            return True
        kind = self._touched.get(element_id)
        if kind is not None:
            return kind == OWNER
        entity = self._alive(element_id)
        return entity is not None and self._kinds.kind(entity) == OWNER

    def _owners_above(self, entity: ifcopenshell.entity_instance, cache: dict[int, frozenset[int]]) -> frozenset[int]:
        start_id = entity.id()
        if start_id in cache:
            return cache[start_id]
        owners: set[int] = set()
        stack = [entity]
        seen = {start_id}
        while stack:
            current = stack.pop()
            current_id = current.id()
            if current_id != start_id and current_id in cache:
                owners |= cache[current_id]
                continue
            # Placements of elements placed relative to this one are walked too: those elements moved.
            for referrer in self.model.get_inverse(current):
                referrer_id = referrer.id()
                if referrer_id in seen:
                    continue
                seen.add(referrer_id)
                kind = self._kinds.kind(referrer)
                if kind == OWNER:
                    owners.add(referrer_id)
                elif kind == RELATIONSHIP:
                    owners |= self._defined_by(referrer, current_id)
                elif kind == RESOURCE:
                    stack.append(referrer)
        result = frozenset(owners)
        cache[start_id] = result
        return result

    def _defined_by(self, rel: ifcopenshell.entity_instance, source_id: int) -> set[int]:
        """Elements described by `source` through a defining relationship (a property set's objects)."""
        if not self._kinds.is_a_any(rel, "defining", DEFINING_RELATIONSHIPS):
            return set()
        relating, related = self._relationship_sides(rel)
        if source_id not in relating:
            return set()
        return {i for i in related if self._is_owner_id(i)}


class ChangeRecorder(_ElementMapping):
    """Installed as `model.transaction` for one script run; `finish()` turns what it saw into a ChangeSet.

    Scripts that open their own IfcOpenShell transactions (a few API functions do, to discard temporary
    entities) get real nested transactions stacked on top: they are fed the same events.
    """

    def __init__(self, model: ifcopenshell.file) -> None:
        super().__init__(model)
        self.nested: list[Any] = []

    # IfcOpenShell checks `if file.transaction:` before calling the hooks below.
    def __bool__(self) -> bool:
        return True

    # --- hooks called by IfcOpenShell -------------------------------------------------------------
    def store_create(self, element: ifcopenshell.entity_instance) -> None:
        for transaction in self.nested:
            transaction.store_create(element)
        element_id = element.id()
        if not element_id:
            return
        self.counts["created"] += 1
        self._created.add(element_id)
        kind = self._kinds.kind(element)
        self._touched[element_id] = kind
        if kind == RELATIONSHIP:
            self._snapshots[element_id] = _RelationshipSnapshot(frozenset(), frozenset(), *self._rel_flags(element))

    def store_edit(self, element: ifcopenshell.entity_instance, index: int, value: Any) -> None:
        for transaction in self.nested:
            transaction.store_edit(element, index, value)
        element_id = element.id()
        if not element_id:
            return
        self.counts["edited"] += 1
        kind = self._touch(element, element_id)
        if kind == OWNER and element_id not in self._geometric_owners:
            if self._kinds.attribute_names(element)[index] in GEOMETRIC_ATTRIBUTES:
                self._geometric_owners.add(element_id)

    def store_delete(self, element: ifcopenshell.entity_instance) -> None:
        for transaction in self.nested:
            transaction.store_delete(element)
        element_id = element.id()
        if not element_id:
            return
        self.counts["deleted"] += 1
        kind = self._touch(element, element_id)
        if kind == OWNER and element_id not in self._created and element_id not in self._deleted_info:
            self._deleted_info[element_id] = self._describe_deleted(element)
            if element.is_a("IfcProduct"):
                self._deleted_products.add(element_id)
        self._deleted.add(element_id)
        geometric = kind == RESOURCE and self._kinds.is_a_any(element, "geometric", GEOMETRIC_RESOURCES)
        # Removing an entity edits every entity that references it: those count as touched.
        for referrer in self.model.get_inverse(element):
            referrer_id = referrer.id()
            if referrer_id in self._deleted:
                continue
            referrer_kind = self._touch(referrer, referrer_id)
            if geometric and referrer_kind == OWNER:
                self._geometric_owners.add(referrer_id)

    def batch(self) -> None:
        for transaction in self.nested:
            transaction.batch()

    def unbatch(self) -> None:
        for transaction in self.nested:
            transaction.unbatch()


def changes_between(before: ifcopenshell.file, after: ifcopenshell.file, created: set[int], deleted: set[int],
                    differing: set[int]) -> ChangeSet:
    """The ChangeSet of a run from the two models themselves: `created` ids exist only in `after`, `deleted`
    only in `before`, `differing` in both with text that differs (ifc_host.model_diff). An entity whose
    values are the same in both (a value written back unchanged) changed nothing."""
    return changes_after(read_before(before, deleted, differing), after, created, deleted, differing)


@dataclass
class BeforeSide:
    """What the ChangeSet of a run needs of the model before it (read_before): the keeper reads it from the
    committed model and then patches that same model into the one after the run (model_patch.InPlace), so
    the two never need to exist at once."""

    max_id: int
    snapshots: dict[int, Snapshot]  # every deleted or differing entity's values before the run
    kinds: dict[int, str]  # of the deleted entities
    relationships: dict[int, _RelationshipSnapshot]  # what each deleted or differing entity linked
    deleted_info: dict[int, dict[str, Any]]  # describe_element of each deleted element, links intact
    deleted_products: set[int]


def read_before(before: ifcopenshell.file, deleted: set[int], differing: set[int]) -> BeforeSide:
    """The BeforeSide of a run that deleted `deleted` and rewrote `differing`, read from the model before it."""
    reader = _ElementMapping(before)
    side = BeforeSide(before.get_max_id(), {}, {}, {}, {}, set())
    labels: dict[int, str] | None = None
    for entity_id in sorted(differing | deleted):
        old = before.by_id(entity_id)
        side.snapshots[entity_id] = snapshot_of(old)
        relating, related = reader._relationship_sides(old)
        side.relationships[entity_id] = _RelationshipSnapshot(frozenset(relating), frozenset(related),
                                                              *reader._rel_flags(old))
        if entity_id not in deleted:
            continue
        kind = side.kinds[entity_id] = reader._kinds.kind(old)
        if kind == OWNER:
            if labels is None:
                labels = storey_labels(before)
            side.deleted_info[entity_id] = describe_element(old, labels)  # read before: links intact
            if old.is_a("IfcProduct"):
                side.deleted_products.add(entity_id)
    return side


def changes_after(before: BeforeSide, after: ifcopenshell.file, created: set[int], deleted: set[int],
                  differing: set[int]) -> ChangeSet:
    """changes_between, with what it needs of the model before the run read beforehand (read_before)."""
    return _DiffMapping(before, after, set(created), set(deleted), differing).finish()


class _DiffMapping(_ElementMapping):
    def __init__(self, before: BeforeSide, after: ifcopenshell.file, created: set[int], deleted: set[int],
                 differing: set[int]) -> None:
        super().__init__(after)
        self._initial_max_id = before.max_id
        for entity_id in sorted(differing):
            new = after.by_id(entity_id)
            was = before.snapshots[entity_id]  # (another class under the same id is an edit of everything: cls differs)
            if was == snapshot_of(new):
                continue
            kind = self._kinds.kind(new)
            self._touched[entity_id] = kind
            self._before[entity_id] = was
            self.counts["edited"] += 1
            if kind == RELATIONSHIP:
                self._snapshots[entity_id] = before.relationships[entity_id]
            elif kind == OWNER and self._geometry_differs(was, new):
                self._geometric_owners.add(entity_id)
        for entity_id in sorted(deleted):
            kind = before.kinds[entity_id]
            self._touched[entity_id] = kind
            self._before[entity_id] = before.snapshots[entity_id]
            self._deleted.add(entity_id)
            self.counts["deleted"] += 1
            if kind == RELATIONSHIP:
                self._snapshots[entity_id] = before.relationships[entity_id]
            elif kind == OWNER:
                self._deleted_info[entity_id] = before.deleted_info[entity_id]
                if entity_id in before.deleted_products:
                    self._deleted_products.add(entity_id)
        for entity_id in sorted(created):
            new = after.by_id(entity_id)
            kind = self._kinds.kind(new)
            self._touched[entity_id] = kind
            self._created.add(entity_id)
            self.counts["created"] += 1
            if kind == RELATIONSHIP:
                self._snapshots[entity_id] = _RelationshipSnapshot(frozenset(), frozenset(), *self._rel_flags(new))

    def _geometry_differs(self, old: Snapshot, new: ifcopenshell.entity_instance) -> bool:
        if old.cls != new.is_a():
            return True
        names = self._kinds.attribute_names(new)
        return any(old.values[i] != plain_value(new[i]) for i, name in enumerate(names)
                   if name in GEOMETRIC_ATTRIBUTES)
