"""Models kept open by a render server between views (render_child.py ``--serve``), with their meshes.

Opening a big file is most of a first view (Revit's BasicHouse: 7-14 s of parsing before anything is drawn), and
a person or a model asks for several views of one model: its plans, 3D, the same plan after a change. A server
keeps the last few models it opened, each keyed by its path, its ``file_signature`` (device, inode, size, mtime)
and the parent's digest of its content; a commit replaces the file, so the next view of it finds another
signature and opens the committed model. Each kept model holds the meshes built or loaded for it, so a second
view of the same model draws without the geometry kernel or the disk cache.

Memory is bounded: at most ``MAX_MODELS`` models, a file that is gone or changed is dropped at the next request,
and after a request that leaves the process above ``memory_limit_mb()`` the others are dropped; if that is not
enough the server says so and exits (the parent starts a fresh one).
"""
from __future__ import annotations

import gc
import os
from collections import OrderedDict
from dataclasses import dataclass, field

import ifcopenshell

from ifc_host.file_identity import file_signature
from ifc_host.render_background import BackgroundBuilds
from ifc_host.render_scene import Mesh, open_model

MAX_MODELS = 3
DEFAULT_MEMORY_MB = 3072
MEMORY_ENV = "NEXUS_RENDER_MEMORY_MB"


@dataclass
class OpenModel:
    path: str
    signature: tuple[int, int, int, int]
    content_key: str | None
    model: ifcopenshell.file
    meshes: dict[int, Mesh] = field(default_factory=dict)  # element id -> its mesh, for this content only
    builds: BackgroundBuilds = field(default_factory=BackgroundBuilds)  # its costly bodies built meanwhile


class OpenModels:
    def __init__(self, keep: int = MAX_MODELS) -> None:
        self._keep = keep
        self._models: OrderedDict[str, OpenModel] = OrderedDict()
        self.opens = 0  # models opened (not found kept) in this process's life

    def get(self, path: str, content_key: str | None = None) -> OpenModel:
        """The model at ``path`` as it is on disk now: the kept one if the file is unchanged, else opened anew."""
        self._drop_stale()
        signature = file_signature(path)  # taken before the open: a file replaced meanwhile is opened again next time
        kept = self._models.get(path)
        if kept is not None and signature is not None and kept.signature == signature and (
                content_key is None or kept.content_key == content_key):
            self._models.move_to_end(path)
            return kept
        self._forget(path)
        model = open_model(path)
        self.opens += 1
        if signature is None:  # the file went away while being read: nothing to keep
            return OpenModel(path, (0, 0, 0, 0), content_key, model)
        entry = OpenModel(path, signature, content_key, model)
        self._models[path] = entry
        while len(self._models) > self._keep:
            self._forget(next(iter(self._models)))
        return entry

    def paths(self) -> list[str]:
        return list(self._models)

    def shrink(self, keep_path: str | None) -> bool:
        """Past the memory limit, drop every model but ``keep_path``; False when the process is still above it."""
        if resident_mb() <= memory_limit_mb():
            return True
        for path in [p for p in self._models if p != keep_path]:
            self._forget(path)
        gc.collect()
        return resident_mb() <= memory_limit_mb()

    def _drop_stale(self) -> None:
        for path, entry in list(self._models.items()):
            if file_signature(path) != entry.signature:
                self._forget(path)

    def _forget(self, path: str) -> None:
        """Drop the model kept for ``path`` (if any), stopping the builds of its bodies."""
        entry = self._models.pop(path, None)
        if entry is not None:
            entry.builds.close()


def memory_limit_mb() -> float:
    try:
        return float(os.environ.get(MEMORY_ENV) or DEFAULT_MEMORY_MB)
    except ValueError:
        return float(DEFAULT_MEMORY_MB)


def resident_mb() -> float:
    """This process's resident memory (Linux /proc; 0 where it cannot be read, so no limit applies)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            pages = int(handle.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)
