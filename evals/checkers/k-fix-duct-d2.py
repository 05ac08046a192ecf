"""Duct D2 crosses a stud partition: shorten it so it stops short of it, keep its start, change nothing else."""
import ifcopenshell.util.placement as up

from .shared import clashes


def _duct(model, name):
    found = [d for d in model.by_type("IfcDuctSegment") if d.Name == name]
    return found[0] if found else None


def check(before, after, answer):
    duct = _duct(after, "Duct D2")
    if duct is None:
        return False, "Duct D2 is gone: it was to be shortened, not deleted"
    if "Duct D2" in clashes.crossing(after):
        return False, "Duct D2 still crosses a wall"
    start_before = up.get_local_placement(_duct(before, "Duct D2").ObjectPlacement)[:3, 3]
    start_after = up.get_local_placement(duct.ObjectPlacement)[:3, 3]
    if abs(start_before - start_after).max() > 0.01:
        return False, f"Duct D2 moved its start from {start_before.round(2)} to {start_after.round(2)}"
    if clashes.crossing(after) != [n for n in clashes.crossing(before) if n != "Duct D2"]:
        return False, f"the other clashes changed: {clashes.crossing(after)}"
    ducts = {d.Name: up.get_local_placement(d.ObjectPlacement).round(4).tolist() for d in before.by_type("IfcDuctSegment")}
    for d in after.by_type("IfcDuctSegment"):
        if d.Name != "Duct D2" and ducts.get(d.Name) != up.get_local_placement(d.ObjectPlacement).round(4).tolist():
            return False, f"{d.Name} moved"
    walls = {w.id(): w.Name for w in before.by_type("IfcWall")}
    if walls != {w.id(): w.Name for w in after.by_type("IfcWall")}:
        return False, "walls changed"
    return True, "Duct D2 stops short of the partition"
