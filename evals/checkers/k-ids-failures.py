"""Which requirements of the IDS (door fire rating, door marks) fail, and on which doors?"""
from cloud.evaluation import checks

from .shared import answers


def expected(model):
    return sorted(d.Tag for d in model.by_type("IfcDoor") if not checks.pset_value(d, "Pset_DoorCommon", "FireRating"))


def others(model):
    return sorted(d.Tag for d in model.by_type("IfcDoor") if d.Tag)


names = answers.names_exactly(expected, others)


def check(before, after, answer):
    ok, detail = names(before, after, answer)
    if not ok:
        return ok, detail
    if not checks.mentions(answer, "FireRating") and "fire rating" not in answer.lower():
        return False, "the answer does not say which requirement fails (the fire rating)"
    return True, detail
