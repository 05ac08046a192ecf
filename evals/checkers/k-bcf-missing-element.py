"""A BCF topic whose element is not in the model: nothing is changed, and the TOPIC line says why."""
from cloud.evaluation import checks

from .shared import clashes

TOPIC = '5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a'


def check(before, after, answer):
    same, why = checks.unchanged(before, after)
    if not same:
        return False, why
    said = clashes.topic_lines(answer).get(TOPIC)
    if not said:
        return False, "no TOPIC line for the topic"
    return True, said
