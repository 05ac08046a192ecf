"""Where an element is in the spatial structure: the storey it stands on, how storeys are named, what a storey holds.

The one rule for every reader (the change report, the renderer, the model file's hello and context, the evaluator's
checks, and the cloud's change-report epilogue, which gets these functions injected into its namespace).

An element's *parent* is the first of, in this order:

1. the spatial structure that directly contains it (IfcRelContainedInSpatialStructure): what the author stated;
2. the opening it fills (IfcRelFillsElement), or the element an opening or projection cuts (IfcRelVoidsElement,
   IfcRelProjectsElement): a door in an opening in a wall stands where the wall stands, contained or not;
3. the whole it is a part of (IfcRelAggregates): an assembly's part, a space under its storey;
4. what it is nested in (IfcRelNests): a port, a nested component.

Its *storey* is the first IfcBuildingStorey met walking parents up (a storey is its own); a walk that ends without
one (at a building, site or project, or nowhere) gives none. A containment in a space goes on through the space.
When an element has several relationships of one kind (a model the schema does not allow), the one with the lowest
step id decides, so that every reader agrees. ``elements_of_storey`` is the exact converse of ``storey_of``.
"""
from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable

import ifcopenshell

MAX_DEPTH = 16  # parents walked up before giving up (a cycle in a broken model ends here too)
FEW_ELEMENTS = 200  # up to this many, each element's own relationships are read; beyond, all are indexed once

Entity = ifcopenshell.entity_instance
_CONTAINMENT = "IfcRelContainedInSpatialStructure"

# (relationship class, the child's side, the parent's side, the child's inverse attributes), in the order above.
# IFC2X3 lists nests under Decomposes; IFC4 under Nests.
_LINKS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("IfcRelContainedInSpatialStructure", "RelatedElements", "RelatingStructure", ("ContainedInStructure",)),
    ("IfcRelFillsElement", "RelatedBuildingElement", "RelatingOpeningElement", ("FillsVoids",)),
    ("IfcRelVoidsElement", "RelatedOpeningElement", "RelatingBuildingElement", ("VoidsElements",)),
    ("IfcRelProjectsElement", "RelatedFeatureElement", "RelatingElement", ("ProjectsElements",)),
    ("IfcRelAggregates", "RelatedObjects", "RelatingObject", ("Decomposes",)),
    ("IfcRelNests", "RelatedObjects", "RelatingObject", ("Nests", "Decomposes")),
)
# The parent's inverse attributes that list its children, and which relationships there count (the converse).
_CHILD_LINKS: dict[str, tuple[tuple[str, str], ...]] = {
    "ContainsElements": ((_CONTAINMENT, "RelatedElements"),),
    "HasFillings": (("IfcRelFillsElement", "RelatedBuildingElement"),),
    "HasOpenings": (("IfcRelVoidsElement", "RelatedOpeningElement"),),
    "HasProjections": (("IfcRelProjectsElement", "RelatedFeatureElement"),),
    "IsDecomposedBy": (("IfcRelAggregates", "RelatedObjects"), ("IfcRelNests", "RelatedObjects")),
    "IsNestedBy": (("IfcRelNests", "RelatedObjects"),),
}


def parent_of(element: Entity) -> Entity | None:
    """One step up by the rule above: container, else the opening filled or element cut, else whole, else nest."""
    for rel_class, child_side, parent_side, inverses in _LINKS:
        rels = _own_rels(element, inverses, rel_class)
        if rels is None and rel_class == _CONTAINMENT and element.is_a("IfcProduct"):
            # IFC2X3 (and IFC4 for a space): a product can be contained yet list no ContainedInStructure
            rels = [r for r in element.file.get_inverse(element)
                    if r.is_a(rel_class) and element in _as_tuple(getattr(r, child_side))]
        parents = [getattr(r, parent_side) for r in sorted(rels or (), key=lambda r: r.id())]
        found = next((p for p in parents if p is not None), None)
        if found is not None:
            return found
    return None


def storey_of(element: Entity) -> Entity | None:
    """The IfcBuildingStorey the element stands on (itself for a storey), or None (see the module docstring)."""
    current: Entity | None = element
    for _ in range(MAX_DEPTH):
        if current is None:
            return None
        if current.is_a("IfcBuildingStorey"):
            return current
        current = parent_of(current)
    return None


def storey_labels(model: ifcopenshell.file) -> dict[int, str]:
    """How each storey is named in views, the hello and the context, by step id: its Name when that names it
    alone, else ``#<step id>`` (an unnamed storey, a Name another storey shares, or one that looks like a step id)."""
    storeys = model.by_type("IfcBuildingStorey")
    names = [(s.Name or "").strip() for s in storeys]
    shared = Counter(names)
    return {s.id(): name if name and not name.startswith("#") and shared[name] == 1 else f"#{s.id()}"
            for s, name in zip(storeys, names, strict=True)}


def elements_of_storey(storey: Entity) -> list[Entity]:
    """The products whose storey is `storey` (spaces, their contents, assembly parts, fillings of openings in its
    walls), without feature elements (openings) and without storeys under it (each is its own)."""
    found: dict[int, Entity] = {}
    stack = [storey]
    while stack:
        parent = stack.pop()
        for child, rel, rel_class in _children(parent):
            if child.id() in found or child.is_a("IfcBuildingStorey") or not child.is_a("IfcProduct"):
                continue
            if not _first_link(child, rel, rel_class, parent):  # the rule ranks another of its relationships above this one
                continue
            found[child.id()] = child
            stack.append(child)
    return [e for e in found.values() if not e.is_a("IfcFeatureElement")]


class StoreyIndex:
    """The storey of many elements: every relationship of the rule read once (for many elements in a big model),
    then walks memoised. Gives what ``storey_of`` gives, element by element."""

    def __init__(self, model: ifcopenshell.file) -> None:
        self.model = model
        self._parent: dict[int, int] = {}
        for rel_class, child_side, parent_side, _inverses in _LINKS:
            claimed: dict[int, int] = {}
            for rel in sorted(_by_type(model, rel_class), key=lambda r: r.id()):
                parent = getattr(rel, parent_side)
                if parent is None:
                    continue
                for child in _as_tuple(getattr(rel, child_side)):
                    if child.id() not in self._parent:
                        claimed.setdefault(child.id(), parent.id())
            self._parent.update(claimed)
        self._storeys = {s.id() for s in model.by_type("IfcBuildingStorey")}
        self._storey: dict[int, int | None] = {}

    def storey_id(self, element_id: int) -> int | None:
        chain: list[int] = []
        current: int | None = element_id
        found: int | None = None
        for _ in range(MAX_DEPTH):
            if current is None:
                break
            if current in self._storey:
                found = self._storey[current]
                break
            if current in self._storeys:
                found = current
                break
            chain.append(current)
            current = self._parent.get(current)
        for visited in chain:
            self._storey[visited] = found
        return found


def storey_ids(model: ifcopenshell.file, element_ids: Iterable[int]) -> dict[int, int | None]:
    """Step id of each element's storey (None: no storey; an id the model lacks gives None too): each element's own
    relationships for a few, one index of the whole model for many."""
    wanted = list(dict.fromkeys(int(i) for i in element_ids))
    if len(wanted) > FEW_ELEMENTS:
        index = StoreyIndex(model)
        return {i: index.storey_id(i) for i in wanted}
    out: dict[int, int | None] = {}
    for element_id in wanted:
        try:
            element = model.by_id(element_id)
        except RuntimeError:
            out[element_id] = None
            continue
        storey = storey_of(element)
        out[element_id] = storey.id() if storey is not None else None
    return out


def _own_rels(element: Entity, inverses: tuple[str, ...], rel_class: str) -> list[Entity] | None:
    """The element's relationships of `rel_class` listed in its inverse attributes; None when it has none of them."""
    present = [name for name in inverses if name in _inverse_names(element)]
    if not present:
        return None
    return [r for name in present for r in getattr(element, name) or () if r.is_a(rel_class)]


@functools.cache
def _inverse_names_of(qualified_class: str) -> frozenset[str]:
    schema, ifc_class = qualified_class.split(".")
    declaration = ifcopenshell.ifcopenshell_wrapper.schema_by_name(schema).declaration_by_name(ifc_class)
    if not hasattr(declaration, "all_inverse_attributes"):
        return frozenset()
    return frozenset(a.name() for a in declaration.all_inverse_attributes())


def _inverse_names(element: Entity) -> frozenset[str]:
    """Which inverse attributes the element's class has (asking for a missing one is slow: it raises)."""
    return _inverse_names_of(element.is_a(True))


def _children(parent: Entity) -> list[tuple[Entity, Entity, str]]:
    """(child, the relationship it was reached through, its class in the rule) for every link down from `parent`."""
    out: list[tuple[Entity, Entity, str]] = []
    names = _inverse_names(parent)
    for attribute, links in _CHILD_LINKS.items():
        if attribute not in names:
            continue
        for rel in getattr(parent, attribute) or ():
            link = next(((rel_class, child_side) for rel_class, child_side in links if rel.is_a(rel_class)), None)
            if link is not None:
                out.extend((child, rel, link[0]) for child in _as_tuple(getattr(rel, link[1])))
    return out


def _first_link(child: Entity, rel: Entity, rel_class: str, parent: Entity) -> bool:
    """Whether `parent`, reached from `child` through `rel` (of `rel_class`), is the child's parent by the rule."""
    if rel_class == _CONTAINMENT and "ContainedInStructure" in _inverse_names(child):
        # containment ranks first: only a second containment (which the schema forbids) can take precedence
        rels = child.ContainedInStructure
        return len(rels) == 1 or min(rels, key=lambda r: r.id()) == rel
    return parent_of(child) == parent


def _by_type(model: ifcopenshell.file, ifc_class: str) -> list[Entity]:
    try:
        return model.by_type(ifc_class)
    except RuntimeError:  # a class this schema does not have
        return []


def _as_tuple(value: object) -> tuple[Entity, ...]:
    if value is None:
        return ()
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,)  # type: ignore[return-value]
