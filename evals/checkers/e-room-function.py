"""Room 105 is now an archive: change its function (LongName) from Storage to Archive."""

from cloud.evaluation import checks


def check(before, after, answer):
    room = [s for s in before.by_type("IfcSpace") if s.Name == "105"][0]
    if after.by_id(room.id()).LongName != "Archive":
        return False, f"room 105 is {after.by_id(room.id()).LongName!r}"
    return checks.only_changed(before, after, lambda b, a: b.id() == room.id()
                               and set(checks.attribute_changes((b, a))) == {"LongName"})
