"""What is the net floor area of room 203?"""
import ifcopenshell.util.element as ue

from cloud.evaluation import checks


def expected(model):
    return [ue.get_psets(s)['Qto_SpaceBaseQuantities']['NetFloorArea'] for s in model.by_type('IfcSpace') if s.Name == '203'][0]


def check(before, after, answer):
    same, why = checks.unchanged(before, after)
    if not same:
        return False, why
    want = expected(before)
    if not checks.has_number(answer, want, 0.01):
        return False, f"expected {want} in the answer; it gives {checks.numbers(answer)[:10]}"
    return True, f"answer gives {want}"
