"""Rename the storeys: Level 1 becomes Ground Floor, Level 2 First Floor, Level 3 Second Floor."""

from cloud.evaluation import checks

NEW = {"Level 1": "Ground Floor", "Level 2": "First Floor", "Level 3": "Second Floor"}


def check(before, after, answer):
    for storey in before.by_type("IfcBuildingStorey"):
        got = after.by_id(storey.id()).Name
        if got != NEW[storey.Name]:
            return False, f"{storey.Name} is named {got!r}"
    return checks.only_changed(before, after, lambda b, a: b.is_a("IfcBuildingStorey")
                               and set(checks.attribute_changes((b, a))) == {"Name"})
