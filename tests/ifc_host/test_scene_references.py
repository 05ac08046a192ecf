"""A federated session's reference models in its scenes: a view's scene holds their elements as nodes of their
own model (``extras.model``: the reference's name, ``change``: null), placed into the working model's coordinates
from both models' IfcMapConversion, never counted as changes; a storey's scene holds what reaches into its
heights, a scene of listed elements none. Real render servers on real IFC files, checked by the Khronos validator."""
from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import ifcopenshell
import ifcopenshell.api
import numpy as np

from ifc_host.sample import write_sample_model
from ifc_host.scene import build_scene_file
from tests.test_scene_api import validate

EAST_M = 10.0


def document(glb: bytes) -> dict[str, Any]:
    size = struct.unpack("<I", glb[12:16])[0]
    return json.loads(glb[20:20 + size])


def georeferenced(path: Path, eastings_m: float) -> None:
    """Give the model an IfcMapConversion `eastings_m` east of the map's origin."""
    model = ifcopenshell.open(str(path))
    crs = model.createIfcProjectedCRS(Name="EPSG:25832")
    context = next(c for c in model.by_type("IfcGeometricRepresentationContext")
                   if not c.is_a("IfcGeometricRepresentationSubContext"))
    model.createIfcMapConversion(SourceCRS=context, TargetCRS=crs, Eastings=eastings_m, Northings=0.0,
                                 OrthogonalHeight=0.0, XAxisAbscissa=1.0, XAxisOrdinate=0.0, Scale=1.0)
    model.write(str(path))


def translation(node: dict[str, Any]) -> np.ndarray:
    return np.array(node.get("matrix") or np.eye(4).reshape(-1).tolist()).reshape(4, 4).T[:3, 3]


def test_a_view_s_scene_holds_the_references_elements_as_context_placed_into_the_working_model(tmp_path, pool):
    work, ref = tmp_path / "ARC.ifc", tmp_path / "MEP.ifc"
    write_sample_model(work, storeys=2)
    write_sample_model(ref, storeys=2)  # the same building (same GlobalIds), surveyed 10 m further east
    georeferenced(work, 0.0)
    georeferenced(ref, EAST_M)
    changed = next(e.id() for e in ifcopenshell.open(str(work)).by_type("IfcWall"))

    scene = build_scene_file(str(work), "3D", [], {"modified": [changed]}, refs=[("MEP.ifc", str(ref))])
    assert validate(tmp_path, scene.glb)["errors"] == 0
    nodes = document(scene.glb)["nodes"][1:]
    working = [n for n in nodes if n["extras"]["model"] == "working"]
    referenced = [n for n in nodes if n["extras"]["model"] == "MEP.ifc"]
    assert {n["extras"]["model"] for n in nodes} == {"working", "MEP.ifc"}
    assert len(referenced) == len(working) - sum(1 for n in working if "mesh" not in n) > 40
    assert scene.references == {"MEP.ifc": len(referenced)}
    assert all(n["extras"]["change"] is None for n in referenced)
    assert scene.counts == {"added": 0, "modified": 1, "deleted": 0}  # the reference's twin of the wall is no change
    assert document(scene.glb)["scenes"][0]["extras"]["references"] == {"MEP.ifc": len(referenced)}

    # Placed by the two map conversions: each element of the reference sits 10 m east of its twin.
    twin = {n["name"]: n for n in working}
    shifts = {tuple(np.round(translation(n) - translation(twin[n["name"]]), 4)) for n in referenced if "mesh" in n}
    assert shifts == {(EAST_M, 0.0, 0.0)}, shifts

    storey = build_scene_file(str(work), "Level 1", [], refs=[("MEP.ifc", str(ref))])
    storey_refs = [n for n in document(storey.glb)["nodes"][1:] if n["extras"]["model"] == "MEP.ifc"]
    assert 0 < len(storey_refs) < len(referenced)  # what reaches into Level 1's heights, not Level 2's slab
    assert {n["extras"]["storey"] for n in storey_refs} <= {"Level 1", "Level 2"}

    listed = build_scene_file(str(work), None, [changed], refs=[("MEP.ifc", str(ref))])
    assert listed.nodes == 1 and listed.references == {}  # a scene of listed elements: just them


def test_a_reference_that_is_not_there_fails_the_scene_naming_it(tmp_path, pool):
    work = tmp_path / "ARC.ifc"
    write_sample_model(work, storeys=1)
    try:
        build_scene_file(str(work), "3D", [], refs=[("MEP.ifc", str(tmp_path / "gone" / "MEP.ifc"))])
    except RuntimeError as exc:
        assert "no model file at" in str(exc) and "MEP.ifc" in str(exc)
    else:
        raise AssertionError("a scene with a missing reference was built")
