"""What are the names of the storeys, from the lowest up?"""

from .shared import answers


def expected(model):
    return sorted([s.Name for s in model.by_type('IfcBuildingStorey')])


def others(model):
    return sorted([])


check = answers.names_exactly(expected, others)
