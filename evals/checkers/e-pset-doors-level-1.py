"""Add a property set Nexus_Review with a boolean property Checked = true to every door on Level 1 (and only those)."""
import ifcopenshell.util.element as ue

from cloud.evaluation import checks

NEW_CLASSES = ("IfcPropertySet", "IfcPropertySingleValue", "IfcRelDefinesByProperties")


def new_pset_only(entity):
    return entity.is_a() in NEW_CLASSES


def check(before, after, answer):
    for door in after.by_type("IfcDoor"):
        container = ue.get_container(door)
        on_level_1 = container is not None and container.Name == "Level 1"
        value = checks.pset_value(door, "Nexus_Review", "Checked")
        if on_level_1 and value is not True:
            return False, f"door {door.Tag}: Nexus_Review.Checked is {value!r}"
        if not on_level_1 and value is not None:
            return False, f"door {door.Tag} is not on Level 1 but got Nexus_Review"
    return checks.only_changed(before, after, lambda b, a: False, allow_added=new_pset_only)
