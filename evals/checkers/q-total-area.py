"""What is the total net floor area of all spaces in the building, in square metres?"""
import ifcopenshell.util.element as ue

from cloud.evaluation import checks


def expected(model):
    return round(sum(ue.get_psets(s)['Qto_SpaceBaseQuantities']['NetFloorArea'] for s in model.by_type('IfcSpace')), 2)


def check(before, after, answer):
    same, why = checks.unchanged(before, after)
    if not same:
        return False, why
    want = expected(before)
    if not checks.has_number(answer, want, 0.05):
        return False, f"expected {want} in the answer; it gives {checks.numbers(answer)[:10]}"
    return True, f"answer gives {want}"
