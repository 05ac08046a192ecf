"""Audit the door marks: which marks are used by more than one door?"""

from .shared import answers


def expected(model):
    return sorted([t for t in {d.Tag for d in model.by_type('IfcDoor')} if [d.Tag for d in model.by_type('IfcDoor')].count(t) > 1])


def others(model):
    return sorted([d.Tag for d in model.by_type('IfcDoor') if d.Tag])


check = answers.names_exactly(expected, others)
