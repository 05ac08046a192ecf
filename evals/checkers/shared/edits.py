"""Edits: what the task asks for happened, and nothing else changed (checks.only_changed)."""
import ifcopenshell.util.element as ue
import ifcopenshell.util.placement as up
import numpy

from cloud.evaluation import checks


def exists(model, entity_id):
    try:
        model.by_id(entity_id)
    except RuntimeError:
        return False
    return True


def new_of(before, after, cls):
    return [e for e in after.by_type(cls) if not exists(before, e.id())]


# --- renumbering ---------------------------------------------------------------------------------

def doors_renumbered(level, mark):
    """check(): the doors of `level`, in the order of their current mark (then id), get the marks
    mark.format(n) for n = 1, 2, ...; only their Tag changes."""
    def expected(model):
        doors = sorted((d for d in model.by_type("IfcDoor") if ue.get_container(d) and ue.get_container(d).Name == level),
                       key=lambda d: (d.Tag or "", d.id()))
        return {d.id(): mark.format(n) for n, d in enumerate(doors, start=1)}

    def check(before, after, answer):
        want = expected(before)
        wrong = [f"#{i} is {after.by_id(i).Tag!r}, expected {t!r}" for i, t in want.items() if after.by_id(i).Tag != t]
        if wrong:
            return False, "; ".join(wrong[:5])
        return checks.only_changed(before, after, lambda b, a: b.id() in want
                                   and set(checks.attribute_changes((b, a))) == {"Tag"})
    return check


# --- renaming ------------------------------------------------------------------------------------

def storey_renamed(old, new):
    """check(): every storey named `old` is named `new`; only their Name changes."""
    def check(before, after, answer):
        targets = [s.id() for s in before.by_type("IfcBuildingStorey") if s.Name == old]
        if not targets or any(after.by_id(i).Name != new for i in targets):
            return False, "the storey is not renamed"
        return checks.only_changed(before, after, lambda b, a: b.id() in targets
                                   and set(checks.attribute_changes((b, a))) == {"Name"})
    return check


# --- containment ---------------------------------------------------------------------------------

def orphans_contained_in(level):
    """check(): every element that was in no storey is in `level`, standing where it stood."""
    def check(before, after, answer):
        orphans = [e for e in before.by_type("IfcElement")
                   if not e.is_a("IfcOpeningElement") and ue.get_container(e) is None]
        if not orphans:
            return False, "the model has no uncontained element: the task does not fit it"
        for old in orphans:
            new = after.by_id(old.id())
            container = ue.get_container(new)
            if container is None or container.Name != level:
                return False, f"{old.Tag} is in {container.Name if container else 'no storey'}"
        ids = {o.id() for o in orphans}
        for old in orphans:  # a new container may re-base its placement; where it stands must not change
            if not numpy.allclose(up.get_local_placement(old.ObjectPlacement),
                                  up.get_local_placement(after.by_id(old.id()).ObjectPlacement), atol=1e-6):
                return False, f"{old.Tag} moved"

        def allowed(b, a):
            changes = set(checks.attribute_changes((b, a)))
            if b.id() in ids:
                return changes == {"ObjectPlacement"}
            return (b.is_a("IfcRelContainedInSpatialStructure") and changes == {"RelatedElements"}
                    and {e.id() for e in a.RelatedElements} - {e.id() for e in b.RelatedElements} <= ids)

        return checks.only_changed(
            before, after, allowed,
            allow_added=lambda e: e.is_a("IfcRelContainedInSpatialStructure") or not e.is_a("IfcRoot"),
            allow_removed=lambda e: not e.is_a("IfcRoot"))
    return check


# --- deletion ------------------------------------------------------------------------------------

def deleted(targets_of):
    """check(): the elements targets_of(before) are gone, with what named them and their own shape data."""
    def check(before, after, answer):
        targets = targets_of(before)
        if not targets:
            return False, "nothing in the model matches the task"
        ids = {t.id() for t in targets}
        left = [i for i in ids if exists(after, i)]
        if left:
            return False, f"still there: {left}"

        def rel_or_plain(entity):  # relationships that named it, and its own placement and shape data
            return entity.is_a("IfcRelationship") or not entity.is_a("IfcRoot") or entity.id() in ids

        def rel_dropped_it(b, a):
            return (b.is_a("IfcRelationship")
                    and {"RelatedElements", "RelatedObjects"} >= set(checks.attribute_changes((b, a))))

        return checks.only_changed(before, after, rel_dropped_it, allow_removed=rel_or_plain)
    return check


# --- moving --------------------------------------------------------------------------------------

def world(model):
    return {p.id(): up.get_local_placement(p.ObjectPlacement) for p in model.by_type("IfcProduct") if p.ObjectPlacement}


def moved_by(targets_of, delta):
    """check(): the products targets_of(before) moved by `delta` (x, y, z), without turning; no other moved."""
    def check(before, after, answer):
        targets = {e.id() for e in targets_of(before)}
        if not targets:
            return False, "nothing in the model matches the task"
        old, new = world(before), world(after)
        for pid, matrix in old.items():
            moved = new.get(pid)
            if moved is None:
                return False, f"#{pid} lost its placement"
            shift = moved[:3, 3] - matrix[:3, 3]
            want = numpy.array(delta) if pid in targets else numpy.zeros(3)
            if not numpy.allclose(shift, want, atol=1e-4) or not numpy.allclose(moved[:3, :3], matrix[:3, :3], atol=1e-6):
                return False, (f"#{pid} {before.by_id(pid).is_a()} moved by {shift.round(4).tolist()}, "
                               f"expected {want.tolist()}")
        return checks.only_changed(before, after, lambda b, a: not b.is_a("IfcRoot") or b.id() in targets,
                                   allow_added=lambda e: not e.is_a("IfcRoot"),
                                   allow_removed=lambda e: not e.is_a("IfcRoot"))
    return check


# --- a new wall ----------------------------------------------------------------------------------

def _entities(rel):
    for value in rel:
        for item in value if isinstance(value, tuple) else (value,):
            if hasattr(item, "is_a") and item.id():
                yield item


def _new_or_context(before, entity):
    return (not entity.is_a("IfcRoot") or not exists(before, entity.id())
            or entity.is_a("IfcBuildingStorey") or entity.is_a("IfcTypeObject"))


def new_wall(name, level, start, door=None, door_classes=()):
    """check(): one new wall named `name` on `level` with a body, placed at `start` (x, y); then
    door(before, after, wall) -> (ok, detail) when given; the new roots allowed are the wall and the new
    entities of `door_classes`; old relationships may only gain them."""
    def check(before, after, answer):
        walls = new_of(before, after, "IfcWall")
        if len(walls) != 1:
            return False, f"expected one new wall, found {len(walls)}"
        wall = walls[0]
        if wall.Name != name:
            return False, f"the new wall is named {wall.Name!r}"
        container = ue.get_container(wall)
        if container is None or container.Name != level:
            return False, f"the new wall is not on {level}"
        if not wall.Representation or not any(r.RepresentationIdentifier == "Body"
                                              for r in wall.Representation.Representations):
            return False, "the new wall has no body"
        origin = up.get_local_placement(wall.ObjectPlacement)[:3, 3]
        if abs(origin[0] - start[0]) > 0.01 or abs(origin[1] - start[1]) > 0.01:
            return False, f"the wall starts at {origin[:2].round(3).tolist()}, expected {[*start]}"
        door_ok, detail = door(before, after, wall) if door is not None else (True, "")
        if not door_ok:
            return False, detail
        added_roots = {wall.id(), *[e.id() for cls in door_classes for e in new_of(before, after, cls)]}

        def allowed_new(entity):
            if entity.is_a("IfcRelationship"):  # it may tie new things to the storey or a type, nothing else old
                return all(_new_or_context(before, e) for e in _entities(entity))
            return not entity.is_a("IfcRoot") or entity.id() in added_roots

        def rel_grew(b, a):
            return (b.is_a("IfcRelationship")
                    and set(checks.attribute_changes((b, a))) <= {"RelatedElements", "RelatedObjects"})

        return checks.only_changed(before, after, rel_grew, allow_added=allowed_new)
    return check
