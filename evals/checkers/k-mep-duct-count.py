"""How many duct segments and how many duct fittings does buildingSMART's MEP.ifc have?"""
from cloud.evaluation import checks


def check(before, after, answer):
    same, why = checks.unchanged(before, after)
    if not same:
        return False, why
    segments, fittings = len(before.by_type("IfcFlowSegment")), len(before.by_type("IfcFlowFitting"))
    if not (checks.has_number(answer, segments) and checks.has_number(answer, fittings)):
        return False, f"expected {segments} segments and {fittings} fittings; the answer gives {checks.numbers(answer)[:8]}"
    return True, f"{segments} segments, {fittings} fittings"
