"""Which doors are external doors? Give their marks."""
import ifcopenshell.util.element as ue

from .shared import answers


def expected(model):
    return sorted([d.Tag for d in model.by_type('IfcDoor') if ue.get_psets(d).get('Pset_DoorCommon', {}).get('IsExternal')])


def others(model):
    return sorted([d.Tag for d in model.by_type('IfcDoor') if d.Tag])


check = answers.names_exactly(expected, others)
