"""Put every element that is not in a storey into Level 1."""
import ifcopenshell.util.element as ue
import ifcopenshell.util.placement as up
import numpy

from cloud.evaluation import checks


def check(before, after, answer):
    orphans = [e for e in before.by_type("IfcElement") if not e.is_a("IfcOpeningElement") and ue.get_container(e) is None]
    if not orphans:
        return False, "the model has no uncontained element: the task does not fit it"
    for old in orphans:
        new = after.by_id(old.id())
        container = ue.get_container(new)
        if container is None or container.Name != 'Level 1':
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

    return checks.only_changed(before, after, allowed,
                               allow_added=lambda e: e.is_a("IfcRelContainedInSpatialStructure") or not e.is_a("IfcRoot"),
                               allow_removed=lambda e: not e.is_a("IfcRoot"))
