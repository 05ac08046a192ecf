"""A glTF 2.0 binary (GLB) from element meshes: one node per element, shared meshes as instances.

Pure numpy and struct: no IFC here (scene_gltf.py decides what goes in). Coordinates come in IFC's
convention (metres, Z up); a root node turns them to glTF's Y up, and every element node sits under it,
translated by ``-origin`` so that float32 positions keep sub-millimetre precision far from (0, 0, 0)
(georeferenced models). Positions only, no normals: glTF clients compute flat normals then (spec 3.7.2.1),
which is what building elements want and halves the size. Indices are uint16 when a mesh allows it.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

RGBA = tuple[float, float, float, float]
# IFC (x east, y north, z up) -> glTF (x right, y up, z toward the viewer): (x, y, z) -> (x, z, -y).
Z_UP_TO_Y_UP = np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]], dtype=float)
_ARRAY_BUFFER, _ELEMENT_ARRAY_BUFFER = 34962, 34963
_FLOAT, _UNSIGNED_SHORT, _UNSIGNED_INT = 5126, 5123, 5125
_EYE4 = np.eye(4)
NODE_JSON_BYTES = 360  # what one node costs in the JSON chunk, roughly (name, matrix, extras), for budgets


@dataclass(frozen=True)
class SceneMesh:
    """Triangles in the mesh's own coordinates, split into parts of one colour each."""
    verts: np.ndarray  # (n, 3) float
    parts: tuple[tuple[RGBA, np.ndarray], ...]  # (colour, (m, 3) int faces)

    def byte_size(self) -> int:
        index_bytes = 2 if len(self.verts) <= 65535 else 4
        return len(self.verts) * 12 + sum(len(faces) for _, faces in self.parts) * 3 * index_bytes + 120


@dataclass
class SceneNode:
    name: str
    extras: dict[str, Any]
    mesh: int | None = None  # index into GlbBuilder's meshes
    matrix: np.ndarray = field(default_factory=lambda: np.eye(4))  # IFC world, metres (before -origin)


class GlbBuilder:
    def __init__(self) -> None:
        self.meshes: list[SceneMesh] = []
        self.nodes: list[SceneNode] = []

    def add_mesh(self, mesh: SceneMesh) -> int:
        self.meshes.append(mesh)
        return len(self.meshes) - 1

    def add_node(self, node: SceneNode) -> None:
        self.nodes.append(node)

    def build(self, origin: np.ndarray, scene_extras: dict[str, Any]) -> bytes:
        shift = np.eye(4)
        shift[:3, 3] = -np.asarray(origin, dtype=float)
        binary = bytearray()
        views: list[dict[str, Any]] = []
        accessors: list[dict[str, Any]] = []
        materials: list[dict[str, Any]] = []
        material_of: dict[RGBA, int] = {}
        meshes: list[dict[str, Any]] = []

        def view_of(data: bytes, target: int) -> int:
            while len(binary) % 4:
                binary.append(0)
            views.append({"buffer": 0, "byteOffset": len(binary), "byteLength": len(data), "target": target})
            binary.extend(data)
            return len(views) - 1

        for mesh in self.meshes:
            positions = np.ascontiguousarray(mesh.verts, dtype="<f4")
            position = len(accessors)
            accessors.append({"bufferView": view_of(positions.tobytes(), _ARRAY_BUFFER), "componentType": _FLOAT,
                              "count": len(positions), "type": "VEC3",
                              "min": [float(v) for v in positions.min(axis=0)],
                              "max": [float(v) for v in positions.max(axis=0)]})
            small = len(positions) <= 65535
            primitives = []
            for colour, faces in mesh.parts:
                indices = np.ascontiguousarray(faces.reshape(-1), dtype="<u2" if small else "<u4")
                accessors.append({"bufferView": view_of(indices.tobytes(), _ELEMENT_ARRAY_BUFFER),
                                  "componentType": _UNSIGNED_SHORT if small else _UNSIGNED_INT,
                                  "count": len(indices), "type": "SCALAR"})
                if colour not in material_of:
                    material_of[colour] = len(materials)
                    materials.append(_material(colour))
                primitives.append({"attributes": {"POSITION": position}, "indices": len(accessors) - 1,
                                   "material": material_of[colour], "mode": 4})
            meshes.append({"primitives": primitives})

        nodes: list[dict[str, Any]] = [{"name": "IFC model (Z up)", "matrix": _column_major(Z_UP_TO_Y_UP),
                                        "children": list(range(1, len(self.nodes) + 1))}]
        for node in self.nodes:
            entry: dict[str, Any] = {"name": node.name, "extras": node.extras}
            if node.mesh is not None:
                entry["mesh"] = node.mesh
            matrix = shift @ node.matrix
            if not np.array_equal(matrix, _EYE4):
                entry["matrix"] = _column_major(matrix)
            if "before_matrix" in node.extras:
                entry["extras"] = {**node.extras, "before_matrix": _column_major(shift @ node.extras["before_matrix"])}
            nodes.append(entry)
        if len(nodes) == 1:
            del nodes[0]["children"]

        document: dict[str, Any] = {
            "asset": {"version": "2.0", "generator": "NexusAI IFC host (ifc_host/scene_gltf.py)"},
            "scene": 0, "scenes": [{"name": scene_extras.get("view", "scene"), "nodes": [0],
                                    "extras": {**scene_extras, "origin_m": [float(v) for v in origin]}}],
            "nodes": nodes,
        }
        if meshes:
            document.update(meshes=meshes, accessors=accessors, bufferViews=views, materials=materials)
        if binary:
            while len(binary) % 4:
                binary.append(0)
            document["buffers"] = [{"byteLength": len(binary)}]
        return _glb(document, bytes(binary))


def _material(colour: RGBA) -> dict[str, Any]:
    material: dict[str, Any] = {"pbrMetallicRoughness": {"baseColorFactor": [round(c, 4) for c in colour],
                                                         "metallicFactor": 0.0, "roughnessFactor": 0.9},
                                "doubleSided": True}
    if colour[3] < 0.999:
        material["alphaMode"] = "BLEND"
    return material


def _column_major(matrix: np.ndarray) -> list[float]:
    return [float(v) for v in np.asarray(matrix, dtype=float).T.reshape(-1)]


def _glb(document: dict[str, Any], binary: bytes) -> bytes:
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 4)
    chunks = struct.pack("<II", len(text), 0x4E4F534A) + text
    if binary:
        chunks += struct.pack("<II", len(binary), 0x004E4942) + binary
    return struct.pack("<III", 0x46546C67, 2, 12 + len(chunks)) + chunks
