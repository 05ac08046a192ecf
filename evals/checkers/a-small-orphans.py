"""Which elements are not placed in any storey? Give their marks."""
import ifcopenshell.util.element as ue

from cloud.evaluation import checks


def expected(model):
    return sorted([e.Tag or e.Name for e in model.by_type('IfcElement') if not e.is_a('IfcOpeningElement') and ue.get_container(e) is None])


def others(model):
    return sorted([e.Tag for e in model.by_type('IfcElement') if getattr(e, 'Tag', None)])


def check(before, after, answer):
    same, why = checks.unchanged(before, after)
    if not same:
        return False, why
    want = expected(before)
    ok, missing = checks.mentions_all(answer, want)
    if not ok:
        return False, f"missing from the answer: {', '.join(missing)}"
    extra = checks.mentions_none(answer, [o for o in others(before) if o not in want])
    if extra:
        return False, f"the answer also names: {', '.join(extra)}"
    return True, f"names exactly {', '.join(want)}"
