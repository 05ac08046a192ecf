"""How many doors are in this model?"""

from .shared import answers


def expected(model):
    return len(model.by_type('IfcDoor'))


check = answers.number_in_answer(expected)
