"""A BCF topic of buildingSMART's test cases on Architectural.ifc: name its wall EW-01; one TOPIC line."""
from cloud.evaluation import checks

from .shared import clashes

WALL = "1E8YkwPMfB$h99jtn_uAjI"
TOPIC = 'd029895e-2bdc-4f48-8bf4-8e540425f238'


def check(before, after, answer):
    if after.by_guid(WALL).Name != "EW-01":
        return False, f"the wall is named {after.by_guid(WALL).Name!r}"
    if TOPIC not in clashes.topic_lines(answer):
        return False, "no TOPIC line for the topic"
    wall_id = before.by_guid(WALL).id()
    return checks.only_changed(before, after, lambda b, a: b.id() == wall_id)
