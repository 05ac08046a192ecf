"""How many doors are on Level 2?"""
import ifcopenshell.util.element as ue

from .shared import answers


def expected(model):
    return len([d for d in model.by_type('IfcDoor') if ue.get_container(d) and ue.get_container(d).Name == 'Level 2'])


check = answers.number_in_answer(expected)
