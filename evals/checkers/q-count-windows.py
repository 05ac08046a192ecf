"""How many windows does the building have?"""

from .shared import answers


def expected(model):
    return len(model.by_type('IfcWindow'))


check = answers.number_in_answer(expected)
