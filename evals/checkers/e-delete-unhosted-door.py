"""Delete the door D101A (it stands in a wall without an opening)."""

from cloud.evaluation import checks


def check(before, after, answer):
    targets = [d for d in before.by_type("IfcDoor") if d.Tag == "D101A"]
    if not targets:
        return False, "nothing in the model matches the task"
    ids = {t.id() for t in targets}
    left = [i for i in ids if _exists(after, i)]
    if left:
        return False, f"still there: {left}"

    def rel_or_plain(entity):  # relationships that named it, and its own placement and shape data
        return entity.is_a("IfcRelationship") or not entity.is_a("IfcRoot") or entity.id() in ids

    def rel_dropped_it(b, a):
        return b.is_a("IfcRelationship") and {"RelatedElements", "RelatedObjects"} >= set(checks.attribute_changes((b, a)))

    return checks.only_changed(before, after, rel_dropped_it, allow_removed=rel_or_plain)


def _exists(model, entity_id):
    try:
        model.by_id(entity_id)
    except RuntimeError:
        return False
    return True
