"""What is the net floor area of all spaces on Level 1, corridor included (m2)?"""
import ifcopenshell.util.element as ue

from .shared import answers


def expected(model):
    return round(sum(ue.get_psets(s)['Qto_SpaceBaseQuantities']['NetFloorArea'] for s in model.by_type('IfcSpace') if ue.get_aggregate(s).Name == 'Level 1'), 2)


check = answers.number_in_answer(expected, tolerance=0.05)
