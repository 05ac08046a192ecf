"""Which door types are used: the answer must name every type code (e.g. DT-01)."""
import ifcopenshell.util.element as ue

from .shared import answers


def expected(model):
    return sorted(list({ue.get_type(d).Name.split()[0] for d in model.by_type('IfcDoor') if ue.get_type(d)}))


def others(model):
    return sorted([])


check = answers.names_exactly(expected, others)
