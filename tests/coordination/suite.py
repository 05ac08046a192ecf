"""buildingSMART's BCF-XML test cases beside the checkout (NEXUS_BCF_SUITE, set by scripts/corpus.sh from ../shared/bcf):
never copied into this repository, read in place; tests skip with a message when it is not there."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

SUITE_ENV = "NEXUS_BCF_SUITE"


def suite() -> Path:
    folder = os.environ.get(SUITE_ENV, "")
    if not folder or not Path(folder, "Test Cases", "IFCs", "MEP.ifc").is_file():
        pytest.skip(f"{SUITE_ENV} does not name buildingSMART's BCF-XML test cases (scripts/corpus.sh sets it from "
                    f"../shared/bcf beside the checkout): {folder or 'unset'}")
    return Path(folder)


def cases(version: str) -> list[Path]:
    """Every .bcf archive of one version's test cases (not their unzipped copies)."""
    root = suite() / "Test Cases" / f"v{version}"
    return sorted(p for p in root.rglob("*.bcf*") if p.is_file() and "unzipped" not in p.parts)


def federated_pair() -> tuple[Path, Path]:
    ifcs = suite() / "Test Cases" / "IFCs"
    return ifcs / "Architectural.ifc", ifcs / "MEP.ifc"
