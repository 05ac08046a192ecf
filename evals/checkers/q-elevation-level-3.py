"""At what elevation (in metres) is Level 3?"""

from .shared import answers


def expected(model):
    return [s.Elevation for s in model.by_type('IfcBuildingStorey') if s.Name == 'Level 3'][0]


check = answers.number_in_answer(expected)
