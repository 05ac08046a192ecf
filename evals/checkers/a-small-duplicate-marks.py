"""Are any door marks duplicated? List the duplicated marks."""

from .shared import answers


def expected(model):
    return sorted([t for t in {d.Tag for d in model.by_type('IfcDoor')} if [d.Tag for d in model.by_type('IfcDoor')].count(t) > 1])


def others(model):
    return sorted([d.Tag for d in model.by_type('IfcDoor') if d.Tag])


check = answers.names_exactly(expected, others)
