"""Which duct runs within 10 cm of a wall without crossing it?"""
from .shared import answers, clashes


def expected(model):
    return [clashes.mark(n) for n in clashes.within(model, 0.1)]


def others(model):
    return [clashes.mark(d.Name) for d in model.by_type("IfcDuctSegment")]


check = answers.names_exactly(expected, others)
