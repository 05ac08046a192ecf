"""Questions: the model must be left as it was, and the answer must give what `expected(model)` computes."""
from cloud.evaluation import checks


def number_in_answer(expected, tolerance=0.0):
    """check(): the answer gives the number expected(before), within `tolerance`."""
    def check(before, after, answer):
        same, why = checks.unchanged(before, after)
        if not same:
            return False, why
        want = expected(before)
        if not checks.has_number(answer, want, tolerance):
            return False, f"expected {want} in the answer; it gives {checks.numbers(answer)[:10]}"
        return True, f"answer gives {want}"
    return check


def names_exactly(expected, others):
    """check(): the answer names every item of expected(before) and none of the rest of others(before)."""
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
    return check
