"""How many doors are on Level 2?"""
import ifcopenshell.util.element as ue

from cloud.evaluation import checks


def expected(model):
    return len([d for d in model.by_type('IfcDoor') if ue.get_container(d) and ue.get_container(d).Name == 'Level 2'])


def check(before, after, answer):
    same, why = checks.unchanged(before, after)
    if not same:
        return False, why
    want = expected(before)
    if not checks.has_number(answer, want):
        return False, f"expected {want} in the answer; it gives {checks.numbers(answer)[:10]}"
    return True, f"answer gives {want}"
