"""Move the column C-ORPHAN 1 m north (positive y)."""

import ifcopenshell.util.placement as up
import numpy

from cloud.evaluation import checks

DELTA = (0.0, 1.0, 0.0)


def world(model):
    return {p.id(): up.get_local_placement(p.ObjectPlacement) for p in model.by_type("IfcProduct") if p.ObjectPlacement}


def check(before, after, answer):
    targets = {e.id() for e in [c for c in before.by_type('IfcColumn') if c.Tag == 'C-ORPHAN']}
    if not targets:
        return False, "nothing in the model matches the task"
    old, new = world(before), world(after)
    for pid, matrix in old.items():
        moved = new.get(pid)
        if moved is None:
            return False, f"#{pid} lost its placement"
        shift = moved[:3, 3] - matrix[:3, 3]
        want = numpy.array(DELTA) if pid in targets else numpy.zeros(3)
        if not numpy.allclose(shift, want, atol=1e-4) or not numpy.allclose(moved[:3, :3], matrix[:3, :3], atol=1e-6):
            return False, f"#{pid} {before.by_id(pid).is_a()} moved by {shift.round(4).tolist()}, expected {want.tolist()}"
    return checks.only_changed(before, after, lambda b, a: not b.is_a("IfcRoot") or b.id() in targets,
                               allow_added=lambda e: not e.is_a("IfcRoot"), allow_removed=lambda e: not e.is_a("IfcRoot"))
