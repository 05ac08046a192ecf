"""How many windows are on Level 3?"""
import ifcopenshell.util.element as ue

from .shared import answers


def expected(model):
    return len([d for d in model.by_type('IfcWindow') if ue.get_container(d) and ue.get_container(d).Name == 'Level 3'])


check = answers.number_in_answer(expected)
