"""Which duct goes deepest into a wall, and how deep, in millimetres?"""
from cloud.evaluation import checks

from .shared import clashes


def check(before, after, answer):
    same, why = checks.unchanged(before, after)
    if not same:
        return False, why
    found = clashes.wall_clashes(before)
    (name, _duct, _wall), depth = max(found.items(), key=lambda item: item[1])
    others = [clashes.mark(d.Name) for d in before.by_type("IfcDuctSegment") if d.Name != name]
    if not checks.mentions(answer, clashes.mark(name)):
        return False, f"the deepest is {name}"
    extra = checks.mentions_none(answer, others)
    if extra:
        return False, f"the answer also names {', '.join(extra)}"
    if not checks.has_number(answer, round(depth * 1000), 5):
        return False, f"expected about {depth * 1000:.0f} mm; the answer gives {checks.numbers(answer)[:8]}"
    return True, f"{name}, {depth * 1000:.0f} mm"
