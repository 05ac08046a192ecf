"""On Level 1, create a 4 m long, 3 m high, 100 mm thick wall named 'New partition', starting at x=2, y=-8 and running east."""
import ifcopenshell.util.element as ue
import ifcopenshell.util.placement as up

from cloud.evaluation import checks


def new_of(before, after, cls):
    return [e for e in after.by_type(cls) if not _exists(before, e.id())]


def _exists(model, entity_id):
    try:
        model.by_id(entity_id)
    except RuntimeError:
        return False
    return True


def _entities(rel):
    for value in rel:
        for item in value if isinstance(value, tuple) else (value,):
            if hasattr(item, "is_a") and item.id():
                yield item


def _new_or_context(before, entity):
    return (not entity.is_a("IfcRoot") or not _exists(before, entity.id())
            or entity.is_a("IfcBuildingStorey") or entity.is_a("IfcTypeObject"))


def check(before, after, answer):
    walls = new_of(before, after, "IfcWall")
    if len(walls) != 1:
        return False, f"expected one new wall, found {len(walls)}"
    wall = walls[0]
    if wall.Name != 'New partition':
        return False, f"the new wall is named {wall.Name!r}"
    container = ue.get_container(wall)
    if container is None or container.Name != "Level 1":
        return False, "the new wall is not on Level 1"
    if not wall.Representation or not any(r.RepresentationIdentifier == "Body" for r in wall.Representation.Representations):
        return False, "the new wall has no body"
    origin = up.get_local_placement(wall.ObjectPlacement)[:3, 3]
    if abs(origin[0] - 2.0) > 0.01 or abs(origin[1] - -8.0) > 0.01:
        return False, f"the wall starts at {origin[:2].round(3).tolist()}, expected [2.0, -8.0]"
    door_ok, detail = (True, "")
    if not door_ok:
        return False, detail
    added_roots = {wall.id(), *()}

    def allowed_new(entity):
        if entity.is_a("IfcRelationship"):  # it may tie new things to the storey or a type, nothing else old
            return all(_new_or_context(before, e) for e in _entities(entity))
        return not entity.is_a("IfcRoot") or entity.id() in added_roots

    def rel_grew(b, a):
        return b.is_a("IfcRelationship") and set(checks.attribute_changes((b, a))) <= {"RelatedElements", "RelatedObjects"}

    return checks.only_changed(before, after, rel_grew, allow_added=allowed_new)
