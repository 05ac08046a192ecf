"""Which doors and windows do not fill an opening? Give their marks."""

from .shared import answers


def expected(model):
    return sorted([d.Tag for d in model.by_type('IfcDoor') + model.by_type('IfcWindow') if not d.FillsVoids])


def others(model):
    return sorted([d.Tag for d in model.by_type('IfcDoor') + model.by_type('IfcWindow')])


check = answers.names_exactly(expected, others)
