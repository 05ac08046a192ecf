"""Renumber the doors on Level 3: sort them by their current mark and give them the marks L3-D01, L3-D02, and so on (the mark is the door's Tag)."""
import ifcopenshell.util.element as ue

from cloud.evaluation import checks

LEVEL = 'Level 3'


def expected(model):
    """Doors of LEVEL in the order of their current mark (then id): L3-D01, L3-D02, ..."""
    doors = sorted((d for d in model.by_type("IfcDoor") if ue.get_container(d) and ue.get_container(d).Name == LEVEL),
                   key=lambda d: (d.Tag or "", d.id()))
    return {d.id(): f"L3-D{n:02d}" for n, d in enumerate(doors, start=1)}


def check(before, after, answer):
    want = expected(before)
    wrong = [f"#{i} is {after.by_id(i).Tag!r}, expected {t!r}" for i, t in want.items() if after.by_id(i).Tag != t]
    if wrong:
        return False, "; ".join(wrong[:5])
    return checks.only_changed(before, after, lambda b, a: b.id() in want
                               and set(checks.attribute_changes((b, a))) == {"Tag"})
