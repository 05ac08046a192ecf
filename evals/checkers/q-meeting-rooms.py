"""Which rooms are meeting rooms? Give their numbers."""

from cloud.evaluation import checks


def expected(model):
    return sorted([s.Name for s in model.by_type('IfcSpace') if s.LongName == 'Meeting Room'])


def others(model):
    return sorted([s.Name for s in model.by_type('IfcSpace')])


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
