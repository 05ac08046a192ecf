"""Two doors share the mark D203. The one with the lower id serves room 202: give it the mark D202."""

from cloud.evaluation import checks


def check(before, after, answer):
    twins = sorted((d for d in before.by_type("IfcDoor") if d.Tag == "D203"), key=lambda d: d.id())
    if len(twins) != 2:
        return False, "the model does not have the two D203 doors this task is about"
    first, second = twins
    if after.by_id(first.id()).Tag != "D202" or after.by_id(second.id()).Tag != "D203":
        return False, f"marks are {after.by_id(first.id()).Tag!r} and {after.by_id(second.id()).Tag!r}"
    return checks.only_changed(before, after, lambda b, a: b.id() == first.id()
                               and set(checks.attribute_changes((b, a))) == {"Tag"})
