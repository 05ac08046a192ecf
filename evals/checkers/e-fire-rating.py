"""Give the door that has no fire rating the fire rating EI60 (on the door itself; leave every other door as it is)."""

from cloud.evaluation import checks

NEW_CLASSES = ("IfcPropertySet", "IfcPropertySingleValue", "IfcRelDefinesByProperties")


def new_pset_only(entity):
    return entity.is_a() in NEW_CLASSES


def check(before, after, answer):
    unrated = [d.id() for d in before.by_type("IfcDoor") if not checks.pset_value(d, "Pset_DoorCommon", "FireRating")]
    if not unrated:
        return False, "every door already had a fire rating: the task does not fit this model"
    for door in after.by_type("IfcDoor"):
        was = checks.pset_value(before.by_id(door.id()), "Pset_DoorCommon", "FireRating")
        now = checks.pset_value(door, "Pset_DoorCommon", "FireRating")
        if door.id() in unrated and now != "EI60":
            return False, f"door {door.Tag} has fire rating {now!r}"
        if door.id() not in unrated and now != was:
            return False, f"door {door.Tag} changed from {was!r} to {now!r}"
    return checks.only_changed(before, after, lambda b, a: False, allow_added=new_pset_only)
