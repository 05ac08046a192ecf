"""Which doors have no fire rating? Give their marks."""
import ifcopenshell.util.element as ue

from .shared import answers


def expected(model):
    return sorted([d.Tag for d in model.by_type('IfcDoor') if not ue.get_psets(d).get('Pset_DoorCommon', {}).get('FireRating')])


def others(model):
    return sorted([d.Tag for d in model.by_type('IfcDoor') if d.Tag])


check = answers.names_exactly(expected, others)
