"""What is the net floor area of room 203?"""
import ifcopenshell.util.element as ue

from .shared import answers


def expected(model):
    return [ue.get_psets(s)['Qto_SpaceBaseQuantities']['NetFloorArea'] for s in model.by_type('IfcSpace') if s.Name == '203'][0]


check = answers.number_in_answer(expected, tolerance=0.01)
