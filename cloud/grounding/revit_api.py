"""The Revit host's API index, read at run time from the installed `pyrevit-stubs-NN` package.

The stubs are `.pyi` files and about a third of them do not parse as Python, so they are read line by
line: `class X`, `def name(...) -> T: ...`, and `@property` markers are enough for signatures.
Nothing from the stubs is copied into this repository.
"""
from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

from cloud.grounding.index import ApiEntry, ApiIndex

STUB_PACKAGE = "pyrevit-stubs-{version}"
SUPPORTED = (26, 25, 24, 23, 22)
_CLASS = re.compile(r"^class (\w+)(\((.*)\))?:")
_DEF = re.compile(r"^    def (\w+)\((.*)\)(?: -> (.+?))?:")
_PROPERTY = re.compile(r"^    @property")
_SETTER = re.compile(r"^    @\w+\.setter")


class StubsMissing(LookupError):
    pass


def stub_files(revit_version: int) -> tuple[str, list[Path]]:
    """(distribution name, the .pyi files of its Autodesk namespace) for the nearest installed stubs."""
    candidates = [revit_version, *[v for v in SUPPORTED if v != revit_version]]
    for version in candidates:
        name = STUB_PACKAGE.format(version=version)
        try:
            files = importlib.metadata.files(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        pyi = [Path(f.locate()) for f in files if str(f).endswith(".pyi") and str(f).startswith("Autodesk")]
        if pyi:
            return name, pyi
    raise StubsMissing(f"no pyrevit-stubs package is installed (pip install 'nexusai[revit-stubs]' or "
                       f"pyrevit-stubs-{revit_version})")


def _namespace(path: Path) -> str:
    parts = path.with_suffix("").parts
    start = parts.index("Autodesk")
    names = [p for p in parts[start:] if p != "__init__"]
    return ".".join(names)


def _entries_of(path: Path) -> list[ApiEntry]:
    namespace = _namespace(path)
    entries: list[ApiEntry] = []
    current: str | None = None
    is_property = False
    seen: set[str] = set()
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        cls = _CLASS.match(line)
        if cls:
            current = f"{namespace}.{cls.group(1)}"
            bases = cls.group(3) or ""
            entries.append(ApiEntry(current, "class", f"({bases})" if bases else "", f"in {namespace}"))
            continue
        if current is None:
            continue
        if _PROPERTY.match(line):
            is_property = True
            continue
        if _SETTER.match(line):
            is_property = None  # the setter's def repeats the property: skip it
            continue
        member = _DEF.match(line)
        if member:
            name, params, returns = member.groups()
            if is_property is None or name.startswith("__") and name != "__init__":
                is_property = False
                continue
            params = ", ".join(p.strip() for p in params.split(",") if p.strip() and p.strip() != "self")
            qualified = f"{current}.{name}"
            signature = f": {returns}" if is_property else f"({params})" + (f" -> {returns}" if returns else "")
            key = qualified + signature
            if key not in seen:  # overloads repeat names with different parameters; keep each once
                seen.add(key)
                entries.append(ApiEntry(qualified, "property" if is_property else "method", signature, ""))
            is_property = False
        elif line and not line.startswith(" "):
            current = None
    return entries


def build_revit_index(revit_version: int) -> ApiIndex:
    name, files = stub_files(revit_version)
    entries = [entry for path in sorted(files) for entry in _entries_of(path)]
    return ApiIndex(entries, f"Revit API (from {name})")
