"""Which doors do not fill an opening in a wall? Give their marks."""

from .shared import answers


def expected(model):
    return sorted([d.Tag for d in model.by_type('IfcDoor') if not d.FillsVoids])


def others(model):
    return sorted([d.Tag for d in model.by_type('IfcDoor') if d.Tag])


check = answers.names_exactly(expected, others)
