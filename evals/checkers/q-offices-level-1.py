"""List the rooms (by number) on Level 1 whose function is Office."""
import ifcopenshell.util.element as ue

from .shared import answers


def expected(model):
    return sorted([s.Name for s in model.by_type('IfcSpace') if s.LongName == 'Office' and ue.get_aggregate(s).Name == 'Level 1'])


def others(model):
    return sorted([s.Name for s in model.by_type('IfcSpace')])


check = answers.names_exactly(expected, others)
