"""How many wall elements are in the model?"""

from .shared import answers


def expected(model):
    return len(model.by_type('IfcWall'))


check = answers.number_in_answer(expected)
