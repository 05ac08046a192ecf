"""Are any door marks duplicated? List the duplicated marks."""

from cloud.evaluation import checks


def expected(model):
    return sorted([t for t in {d.Tag for d in model.by_type('IfcDoor')} if [d.Tag for d in model.by_type('IfcDoor')].count(t) > 1])


def others(model):
    return sorted([d.Tag for d in model.by_type('IfcDoor') if d.Tag])


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
