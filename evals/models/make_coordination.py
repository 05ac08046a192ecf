"""Writes coordination.ifc (the coordination tasks' model, committed beside this script): the one-storey sample
building (ifc_host/sample.py, seed 0) with six ducts (IfcDuctSegment, 0.3 x 0.3 m, 2.6 to 2.9 m above the floor)
under its ceiling: D2, D3 and D4 cross a wall (hard clashes), D5 runs 5 cm from a partition without touching it,
D1 and D6 are clear of every wall. Run: `python evals/models/make_coordination.py`."""
from __future__ import annotations

from pathlib import Path

import ifcopenshell
import ifcopenshell.api.context
import ifcopenshell.api.geometry
import ifcopenshell.api.root
import ifcopenshell.api.spatial
import numpy as np

from ifc_host.sample import build_sample_model

OUT = Path(__file__).with_name("coordination.ifc")
SIZE = 0.3
BOTTOM = 2.6
# name, start (x, y), axis ("x" or "y"), length
DUCTS = [("Duct D1", (1.0, 1.0), "y", 4.0), ("Duct D2", (2.5, 4.5), "x", 3.5), ("Duct D3", (10.0, 4.0), "y", 2.6),
         ("Duct D4", (9.0, 10.0), "x", 6.0), ("Duct D5", (7.75, 9.0), "y", 4.0), ("Duct D6", (1.0, 7.0), "x", 14.0)]


def add_ducts(model: ifcopenshell.file) -> None:
    body = next(c for c in model.by_type("IfcGeometricRepresentationSubContext") if c.ContextIdentifier == "Body")
    storey = model.by_type("IfcBuildingStorey")[0]
    for name, (x, y), axis, length in DUCTS:
        duct = ifcopenshell.api.root.create_entity(model, ifc_class="IfcDuctSegment", name=name)
        ifcopenshell.api.spatial.assign_container(model, relating_structure=storey, products=[duct])
        matrix = np.eye(4)
        if axis == "x":  # the box runs along local x, is SIZE thick in local y: centred on the duct's line
            matrix[:3, 3] = (x, y - SIZE / 2, BOTTOM)
        else:  # turned a quarter: local x along world y, local y along world -x
            matrix[:3, 0], matrix[:3, 1] = (0, 1, 0), (-1, 0, 0)
            matrix[:3, 3] = (x + SIZE / 2, y, BOTTOM)
        ifcopenshell.api.geometry.edit_object_placement(model, product=duct, matrix=matrix)
        shape = ifcopenshell.api.geometry.add_wall_representation(model, context=body, length=length, height=SIZE,
                                                                  thickness=SIZE)
        ifcopenshell.api.geometry.assign_representation(model, product=duct, representation=shape)


def main() -> None:
    model = build_sample_model(storeys=1, seed=0)
    add_ducts(model)
    model.write(str(OUT))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
