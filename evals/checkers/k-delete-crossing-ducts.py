"""Delete every duct that crosses a wall; keep the other ducts."""

from .shared import clashes


def check(before, after, answer):
    gone = set(clashes.crossing(before))
    kept = {d.Name for d in before.by_type("IfcDuctSegment")} - gone
    now = {d.Name for d in after.by_type("IfcDuctSegment")}
    if now != kept:
        return False, f"ducts left: {sorted(now)}; expected {sorted(kept)}"
    if {w.id() for w in before.by_type("IfcWall")} != {w.id() for w in after.by_type("IfcWall")}:
        return False, "walls were deleted or added"
    return True, f"deleted {', '.join(sorted(gone))}"
