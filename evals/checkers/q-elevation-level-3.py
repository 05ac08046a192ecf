"""At what elevation (in metres) is Level 3?"""

from cloud.evaluation import checks


def expected(model):
    return [s.Elevation for s in model.by_type('IfcBuildingStorey') if s.Name == 'Level 3'][0]


def check(before, after, answer):
    same, why = checks.unchanged(before, after)
    if not same:
        return False, why
    want = expected(before)
    if not checks.has_number(answer, want):
        return False, f"expected {want} in the answer; it gives {checks.numbers(answer)[:10]}"
    return True, f"answer gives {want}"
