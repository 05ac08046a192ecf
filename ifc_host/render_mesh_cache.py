"""Element meshes kept between renders of the same model content, so a second view of it skips the geometry kernel.

Tessellation is most of a render on real files (six detailed windows of a Revit house take 10 s of an 11 s plan),
and a person or a model often asks for several views of one unchanged model: its plans, then 3D. The parent
(render.py) gives each model content (a digest of the file) a folder; the render child reads the meshes it needs
from it and adds the ones it built. Any change to the file is another digest, so a mesh is never used for a model
it was not built from.

A folder holds .npz files, each written whole under a temporary name and then renamed, so a reader never sees
half a file and renders running at once need no lock. A file that cannot be read is ignored (and its meshes
built again). Only plain arrays are stored: nothing is unpickled.
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path

import numpy as np

from ifc_host.render_scene import Mesh

MAX_FOLDER_BYTES = 256 * 1024 * 1024  # past this, no more meshes of the model are kept (Revit samples: 25-68 MB)


class MeshCache:
    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def load(self, element_ids: set[int]) -> dict[int, Mesh]:
        """The stored meshes of these elements (those not stored are absent)."""
        found: dict[int, Mesh] = {}
        for path in self._files():
            wanted = element_ids - found.keys()
            if not wanted:
                break
            try:
                found.update(_read(path, wanted))
            except Exception:  # unreadable (truncated, not a zip, inconsistent): those meshes are built again
                continue
        return found

    def store(self, meshes: list[Mesh]) -> bool:
        """Keep these meshes for the next render of the same content (nothing when the folder is full); whether
        they were kept."""
        if not meshes or self._size() >= MAX_FOLDER_BYTES:
            return False
        self.folder.mkdir(parents=True, exist_ok=True)
        name = uuid.uuid4().hex
        partial = self.folder / f".{name}.partial"
        try:
            with open(partial, "wb") as handle:
                np.savez(handle, **_arrays(meshes))
            os.replace(partial, self.folder / f"{name}.npz")
        except OSError:  # a full disk costs the cache, not the render
            partial.unlink(missing_ok=True)
            return False
        return True

    def _files(self) -> list[Path]:
        try:
            return sorted(self.folder.glob("*.npz"))
        except OSError:
            return []

    def _size(self) -> int:
        total = 0
        for path in self._files():
            try:
                total += path.stat().st_size
            except OSError:
                pass
        return total


def _arrays(meshes: list[Mesh]) -> dict[str, np.ndarray]:
    return {
        "ids": np.array([m.element_id for m in meshes], dtype=np.int64),
        "classes": np.array([m.ifc_class for m in meshes], dtype=np.str_),
        "vert_counts": np.array([len(m.verts) for m in meshes], dtype=np.int64),
        "face_counts": np.array([len(m.faces) for m in meshes], dtype=np.int64),
        "verts": np.concatenate([m.verts for m in meshes]).astype(np.float64),
        "faces": np.concatenate([m.faces for m in meshes]).astype(np.int64),
        "items": np.concatenate([m.items for m in meshes]).astype(np.int32),
    }


def _read(path: Path, wanted: set[int]) -> dict[int, Mesh]:
    with np.load(path, allow_pickle=False) as data:
        ids = data["ids"]
        rows = [row for row, element_id in enumerate(ids.tolist()) if element_id in wanted]
        if not rows:
            return {}
        vert_ends, face_ends = np.cumsum(data["vert_counts"]), np.cumsum(data["face_counts"])
        verts, faces, items, classes = data["verts"], data["faces"], data["items"], data["classes"]
        if len(ids) != len(classes) or vert_ends[-1] != len(verts) or not face_ends[-1] == len(faces) == len(items):
            raise ValueError(f"{path.name}: inconsistent arrays")
        meshes: dict[int, Mesh] = {}
        for row in rows:
            v0, f0 = vert_ends[row - 1] if row else 0, face_ends[row - 1] if row else 0
            mesh = Mesh(int(ids[row]), str(classes[row]), verts[v0:vert_ends[row]],
                        faces[f0:face_ends[row]], items[f0:face_ends[row]])
            meshes[mesh.element_id] = mesh
        return meshes
