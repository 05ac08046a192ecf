"""Which element penetrates a wall the deepest (buildingSMART's Architectural.ifc)? Its GlobalId and depth."""
from cloud.evaluation import checks
from ifc_host.clash import clash_findings

WALLS = ("IfcWall", "IfcWallStandardCase")


def check(before, after, answer):
    same, why = checks.unchanged(before, after)
    if not same:
        return False, why
    deepest = max((f for f in clash_findings("model.ifc", models={"model.ifc": before})
                   if sum(e.ifc_class in WALLS for e in f.elements) == 1), key=lambda f: f.distance)
    (element,) = [e for e in deepest.elements if e.ifc_class not in WALLS]
    if element.global_id not in answer:
        return False, f"expected the GlobalId {element.global_id} ({element.ifc_class} {element.name})"
    if not checks.has_number(answer, round(deepest.distance * 1000), 5):
        return False, f"expected about {deepest.distance * 1000:.0f} mm"
    return True, f"{element.global_id}, {deepest.distance * 1000:.0f} mm"
