"""The scene's small parts: the GLB writer's layout and the host's copies of the model before each automation."""
from __future__ import annotations

import json
import struct

import numpy as np

from ifc_host.scene_export import BeforeCopies
from ifc_host.scene_glb import GlbBuilder, SceneMesh, SceneNode


def _document(glb: bytes) -> tuple[dict, bytes]:
    size = struct.unpack("<I", glb[12:16])[0]
    document = json.loads(glb[20:20 + size])
    binary_size = struct.unpack("<I", glb[20 + size:24 + size])[0]
    return document, glb[28 + size:28 + size + binary_size]


def test_shared_meshes_are_written_once_and_nodes_are_shifted_by_the_origin_with_their_before_matrix():
    builder = GlbBuilder()
    cube = SceneMesh(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float),
                     (((1.0, 0.0, 0.0, 1.0), np.array([[0, 1, 2], [0, 1, 3]])),
                      ((0.0, 0.0, 1.0, 0.5), np.array([[0, 2, 3]]))))
    mesh = builder.add_mesh(cube)
    placed, before = np.eye(4), np.eye(4)
    placed[:3, 3], before[:3, 3] = [1000.0, 2000.0, 3.0], [999.0, 2000.0, 3.0]
    builder.add_node(SceneNode("A" * 22, {"step_id": 1, "change": "modified", "before_matrix": before}, mesh, placed))
    builder.add_node(SceneNode("B" * 22, {"step_id": 2, "change": None}, mesh, placed))
    builder.add_node(SceneNode("C" * 22, {"step_id": 3, "change": "added"}))  # no body: a node without a mesh
    glb = builder.build(np.array([1000.0, 2000.0, 0.0]), {"view": "Level 1"})
    assert len(glb) % 4 == 0 and struct.unpack("<III", glb[:12]) == (0x46546C67, 2, len(glb))
    document, binary = _document(glb)
    assert len(document["meshes"]) == 1 and len(document["meshes"][0]["primitives"]) == 2
    assert document["buffers"][0]["byteLength"] == len(binary)
    root, a, b, c = document["nodes"]
    assert root["children"] == [1, 2, 3] and root["matrix"][5] == 0.0  # Z up turned to Y up
    assert a["mesh"] == b["mesh"] == 0 and "mesh" not in c
    assert a["matrix"][12:15] == [0.0, 0.0, 3.0]  # shifted by the origin, column-major translation
    assert a["extras"]["before_matrix"][12:15] == [-1.0, 0.0, 3.0]
    assert document["scenes"][0]["extras"]["origin_m"] == [1000.0, 2000.0, 0.0]
    blend = [m for m in document["materials"] if m.get("alphaMode") == "BLEND"]
    assert len(blend) == 1 and blend[0]["pbrMetallicRoughness"]["baseColorFactor"] == [0.0, 0.0, 1.0, 0.5]
    indices = document["accessors"][document["meshes"][0]["primitives"][0]["indices"]]
    assert indices["componentType"] == 5123 and indices["count"] == 6  # uint16 for a small mesh


def test_before_copies_keep_the_last_few_and_drop_what_changed_nothing(tmp_path):
    model = tmp_path / "model.ifc"
    copies = BeforeCopies(keep=2)
    try:
        for n in range(3):
            model.write_text(f"version {n}")
            copies.keep(f"c{n}.run", model)
        assert copies.get("c0.run") is None  # the oldest went
        assert copies.get("c1.run").read_text() == "version 1" and copies.get("c2.run").read_text() == "version 2"
        copies.drop("c2.run")
        assert copies.get("c2.run") is None and copies.get(None) is None and copies.get("unknown") is None
    finally:
        copies.close()
    assert copies.get("c1.run") is None


def test_the_held_snapshot_is_written_once_per_hold_and_again_for_another_hold_or_a_changed_file(tmp_path):
    from ifc_host.scene_export import HeldSnapshot

    written: list[str] = []

    def write(text: str):
        def to(path):
            written.append(text)
            path.write_text(text)
        return to

    snapshot = HeldSnapshot()
    try:
        first = snapshot.path("c1.run", write("held c1"))
        assert snapshot.path("c1.run", write("again")) == first and first.read_text() == "held c1"
        assert written == ["held c1"] and snapshot.writes == 1  # before: a new copy for every scene and view
        first.write_text("changed by someone else, bigger")
        rewritten = snapshot.path("c1.run", write("held c1 anew"))
        assert rewritten != first and rewritten.read_text() == "held c1 anew" and not first.exists()
        other = snapshot.path("c2.run", write("held c2"))
        assert other not in (first, rewritten) and other.read_text() == "held c2" and not rewritten.exists()
        snapshot.release()  # the hold ended: its file goes
        assert not other.exists()
        assert snapshot.path("c2.run", write("c2 once more")).read_text() == "c2 once more"

        def broken(path):
            path.write_text("half")
            raise OSError("disk full")
        try:
            snapshot.path("c3.run", broken)
        except OSError:
            pass
        assert sorted(p.read_text() for p in first.parent.iterdir()) == []  # nothing half-written is left
    finally:
        snapshot.close()
    assert not first.parent.exists()
