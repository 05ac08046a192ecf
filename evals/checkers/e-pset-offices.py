"""Give every Office space a property set Nexus_Occupancy with an integer property Occupants = 2."""

from cloud.evaluation import checks

NEW_CLASSES = ("IfcPropertySet", "IfcPropertySingleValue", "IfcRelDefinesByProperties")


def new_pset_only(entity):
    return entity.is_a() in NEW_CLASSES


def check(before, after, answer):
    for space in after.by_type("IfcSpace"):
        value = checks.pset_value(space, "Nexus_Occupancy", "Occupants")
        if space.LongName == "Office" and (value != 2 or not isinstance(value, int)):
            return False, f"space {space.Name}: Occupants is {value!r}"
        if space.LongName != "Office" and value is not None:
            return False, f"space {space.Name} ({space.LongName}) got Nexus_Occupancy"
    return checks.only_changed(before, after, lambda b, a: False, allow_added=new_pset_only)
