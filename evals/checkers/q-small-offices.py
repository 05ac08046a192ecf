"""List the office rooms by number."""

from .shared import answers


def expected(model):
    return sorted([s.Name for s in model.by_type('IfcSpace') if s.LongName == 'Office'])


def others(model):
    return sorted([s.Name for s in model.by_type('IfcSpace')])


check = answers.names_exactly(expected, others)
