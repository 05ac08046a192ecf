"""What is the total net floor area of all spaces in the building, in square metres?"""
import ifcopenshell.util.element as ue

from .shared import answers


def expected(model):
    return round(sum(ue.get_psets(s)['Qto_SpaceBaseQuantities']['NetFloorArea'] for s in model.by_type('IfcSpace')), 2)


check = answers.number_in_answer(expected, tolerance=0.05)
