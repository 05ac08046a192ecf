"""How many rooms are there, not counting corridors?"""

from .shared import answers


def expected(model):
    return len([s for s in model.by_type('IfcSpace') if s.LongName != 'Corridor'])


check = answers.number_in_answer(expected)
