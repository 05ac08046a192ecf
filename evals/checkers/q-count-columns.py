"""How many columns are in the model, in total?"""

from .shared import answers


def expected(model):
    return len(model.by_type('IfcColumn'))


check = answers.number_in_answer(expected)
