"""List every space on Level 3 by its number, corridors included."""
import ifcopenshell.util.element as ue

from .shared import answers


def expected(model):
    return sorted([s.Name for s in model.by_type('IfcSpace') if ue.get_aggregate(s).Name == 'Level 3'])


def others(model):
    return sorted([s.Name for s in model.by_type('IfcSpace')])


check = answers.names_exactly(expected, others)
