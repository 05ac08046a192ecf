"""How many windows are on Level 3?"""
import ifcopenshell.util.element as ue

from cloud.evaluation import checks


def expected(model):
    return len([d for d in model.by_type('IfcWindow') if ue.get_container(d) and ue.get_container(d).Name == 'Level 3'])


def check(before, after, answer):
    same, why = checks.unchanged(before, after)
    if not same:
        return False, why
    want = expected(before)
    if not checks.has_number(answer, want):
        return False, f"expected {want} in the answer; it gives {checks.numbers(answer)[:10]}"
    return True, f"answer gives {want}"
