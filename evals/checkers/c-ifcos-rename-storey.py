"""Rename the storey 'Ground Floor' to 'Level 0'."""

from cloud.evaluation import checks


def check(before, after, answer):
    targets = [s.id() for s in before.by_type("IfcBuildingStorey") if s.Name == "Ground Floor"]
    if not targets or any(after.by_id(i).Name != "Level 0" for i in targets):
        return False, "the storey is not renamed"
    return checks.only_changed(before, after, lambda b, a: b.id() in targets
                               and set(checks.attribute_changes((b, a))) == {"Name"})
