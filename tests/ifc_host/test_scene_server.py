"""Scenes in the render servers: a scene reads the model the server keeps open (the one the PNG of the same view
opened, with its meshes), the model before a change is kept beside it, and a rewritten file is read anew (its
names, placements and properties too, not the kept ones). Real render servers on real IFC files."""
from __future__ import annotations

import json
import struct
from typing import Any

import ifcopenshell

from ifc_host.render import render_view
from ifc_host.sample import write_sample_model
from ifc_host.scene import build_scene_file


def nodes(glb: bytes) -> list[dict[str, Any]]:
    size = struct.unpack("<I", glb[12:16])[0]
    return json.loads(glb[20:20 + size])["nodes"][1:]


def test_scenes_and_views_of_one_model_come_from_one_open_model_and_a_rewrite_is_read_anew(tmp_path, pool):
    path = tmp_path / "one.ifc"
    write_sample_model(path, storeys=2)
    first = build_scene_file(str(path), "Level 1", [])
    again = build_scene_file(str(path), "Level 1", [])
    [server] = pool.servers()
    assert server.served == 2 and server.opens == 1  # before: each scene opened the file itself, uncounted
    render_view(str(path), "Level 1", [], 400)
    assert server.served == 3 and server.opens == 1  # the view is drawn from the model the scenes opened
    assert again.glb == first.glb and first.nodes > 40

    model = ifcopenshell.open(str(path))
    door = model.by_type("IfcDoor")[0]
    door.Name = "renamed after the first scene"
    model.write(str(path))
    renamed = {n["extras"]["step_id"]: n["extras"]["name"] for n in nodes(build_scene_file(str(path), "Level 1", []).glb)}
    assert renamed[door.id()] == "renamed after the first scene"
    assert pool.servers()[0].opens == 2

    before = tmp_path / "before.ifc"
    write_sample_model(before, storeys=2)
    changed = build_scene_file(str(path), "Level 1", [], {"modified": [door.id()]}, str(before))
    assert changed.counts == {"added": 0, "modified": 1, "deleted": 0}
    assert pool.servers()[0].opens == 3  # the model before the change, kept beside it
