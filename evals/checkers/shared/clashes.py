"""Coordination checks for the k-* tasks: clashes computed with the product's own clash detection
(ifc_host/clash.py, IfcOpenShell's ifcclash) on the model in memory, and BCF topic lines in the answer."""
import re

from ifc_host.clash import clash_findings

WALLS = ("IfcWall", "IfcWallStandardCase", "IfcCurtainWall")


def _is_wall(element):
    return element.ifc_class in WALLS


def wall_clashes(model, kind="IfcDuctSegment", clearance=None):
    """{(element name or GlobalId, wall GlobalId): depth or gap} for `kind` elements against walls."""
    found = {}
    for finding in clash_findings("model.ifc", models={"model.ifc": model}, clearance=clearance):
        a, b = finding.elements
        if _is_wall(b) and not _is_wall(a):
            a, b = b, a
        if _is_wall(a) and (kind is None or b.ifc_class == kind) and not _is_wall(b):
            found[(b.name or b.global_id, b.global_id, a.global_id)] = finding.distance
    return found


def crossing(model, kind="IfcDuctSegment"):
    """Names of the `kind` elements that cross a wall (hard clashes)."""
    return sorted({key[0] for key in wall_clashes(model, kind)})


def within(model, distance, kind="IfcDuctSegment"):
    """Names of the `kind` elements closer than `distance` to a wall without crossing one."""
    near = {key[0] for key in wall_clashes(model, kind, clearance=distance)}
    return sorted(near - set(crossing(model, kind)))


def mark(name):
    """'Duct D2' -> 'D2' (what the answer is checked for)."""
    return name.split()[-1]


def topic_lines(answer):
    """{topic guid (lower case): what the answer says about it} from its `TOPIC <guid>: ...` lines."""
    return {m.group(1).lower(): m.group(2) for m in re.finditer(
        r"TOPIC\s+([0-9A-Fa-f-]{36})\s*[:\-]\s*(.+)", answer)}
