"""Fix the issues in a BCF: Duct D4 shortened to end 10 cm before the stud partition (west end kept), Duct D5 moved
10 cm west (out of the 10 cm clearance); one TOPIC line per topic."""
import ifcopenshell.util.placement as up

from .shared import clashes

TOPICS = ('6f1c2a4e-2b7d-4c1e-9a3f-0d4b5c6e7f8a', '0b9e8d7c-6a5f-4e3d-8c2b-1a0f9e8d7c6b')


def _placement(model, name):
    (duct,) = [d for d in model.by_type("IfcDuctSegment") if d.Name == name]
    return up.get_local_placement(duct.ObjectPlacement)[:3, 3]


def check(before, after, answer):
    said = clashes.topic_lines(answer)
    missing = [t for t in TOPICS if t not in said]
    if missing:
        return False, f"no TOPIC line for {', '.join(missing)}"
    if "Duct D4" in clashes.crossing(after):
        return False, "Duct D4 still crosses the partition"
    if any(abs(a - b) > 0.01 for a, b in zip(_placement(before, "Duct D4"), _placement(after, "Duct D4"), strict=True)):
        return False, "Duct D4's west end moved"
    moved = _placement(before, "Duct D5") - _placement(after, "Duct D5")
    if abs(moved[0] - 0.1) > 0.02 or abs(moved[1]) > 0.01 or abs(moved[2]) > 0.01:
        return False, f"Duct D5 moved by {(-moved).round(3).tolist()}, not 10 cm west"
    if "Duct D5" in clashes.within(after, 0.1):
        return False, "Duct D5 is still within 10 cm of the partition"
    if sorted(clashes.crossing(after)) != ["Duct D2", "Duct D3"]:
        return False, f"other clashes changed: {clashes.crossing(after)}"
    return True, "both topics fixed"
