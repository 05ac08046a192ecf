"""The IFC corpus: the manifest (corpus/manifest.json), where the files are, and which views each one has."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import ifcopenshell

from ifc_host.render_scene import (
    AXONOMETRIC_STOREY_PREFIX,
    AXONOMETRIC_VIEW,
    ELEVATION_VIEWS,
    storeys_by_elevation,
    view_names,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
MANIFEST = REPO_ROOT / "corpus" / "manifest.json"
CORPUS_ENV = "NEXUS_IFC_CORPUS"


@dataclass(frozen=True)
class CorpusFile:
    file: str
    schema: str
    tool: str
    kind: str
    repository: str
    path: str
    commit: str
    licence: str
    bytes: int
    sha256: str
    notes: str

    @property
    def location(self) -> Path:
        return corpus_dir() / self.file

    def present(self) -> bool:
        return self.location.is_file()

    def check_digest(self) -> None:
        digest = hashlib.sha256(self.location.read_bytes()).hexdigest()
        if digest != self.sha256:
            raise AssertionError(f"{self.location} is not the file the manifest names (sha256 {digest}, "
                                 f"expected {self.sha256}): fetch it again from {self.repository}@{self.commit}")


def corpus_dir() -> Path:
    """The folder holding the corpus files: $NEXUS_IFC_CORPUS, else the repository's corpus/ folder."""
    configured = os.environ.get(CORPUS_ENV)
    return Path(configured) if configured else REPO_ROOT / "corpus"


@cache
def manifest() -> tuple[CorpusFile, ...]:
    entries = json.loads(MANIFEST.read_text(encoding="utf-8"))["files"]
    return tuple(CorpusFile(**entry) for entry in entries)


def every_view(model: ifcopenshell.file) -> list[str]:
    """Every storey plan, 3D, 3D of every storey and the elevations, named exactly as the renderer offers them."""
    offered = view_names(model)
    plans = offered[:offered.index(AXONOMETRIC_VIEW)]
    assert len(plans) == len(storeys_by_elevation(model))
    assert offered[len(plans):] == [AXONOMETRIC_VIEW, *ELEVATION_VIEWS]
    return [*plans, AXONOMETRIC_VIEW, *(f"{AXONOMETRIC_STOREY_PREFIX} {plan}" for plan in plans), *ELEVATION_VIEWS]
