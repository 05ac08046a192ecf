"""Which IFC classes of elements clash with the walls in this model (buildingSMART's Architectural.ifc)?"""
from ifc_host.clash import clash_findings

from .shared import answers

WALLS = ("IfcWall", "IfcWallStandardCase")


def expected(model):
    classes = set()
    for finding in clash_findings("model.ifc", models={"model.ifc": model}):
        kinds = [e.ifc_class for e in finding.elements]
        if any(k in WALLS for k in kinds):
            classes.update(k for k in kinds if k not in WALLS)
    return sorted(classes)


def others(model):
    return ["IfcDoor", "IfcWindow", "IfcSpace", "IfcStair", "IfcRailing"]


check = answers.names_exactly(expected, others)
