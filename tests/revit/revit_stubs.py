"""An index of the Revit 2026 API from the installed `pyrevit-stubs-26` package (never copied here).

About a third of those .pyi files do not parse as Python, so this reads them line by line: top-level
`class Name(Bases):` lines open a class; indented `def name`, `name = value` and `name: type` lines are
its members. Good enough to answer "does DB.Transaction have Commit?", which is all the tests ask.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

NAMESPACES = {
    "Autodesk.Revit.DB": "Autodesk/Revit/DB/__init__.pyi",
    "Autodesk.Revit.DB.Events": "Autodesk/Revit/DB/Events/__init__.pyi",
    "Autodesk.Revit.UI": "Autodesk/Revit/UI/__init__.pyi",
    "Autodesk.Revit.UI.Events": "Autodesk/Revit/UI/Events/__init__.pyi",
    "Autodesk.Revit.UI.Selection": "Autodesk/Revit/UI/Selection/__init__.pyi",
    "Autodesk.Revit.ApplicationServices": "Autodesk/Revit/ApplicationServices/__init__.pyi",
    "Autodesk.Revit.Exceptions": "Autodesk/Revit/Exceptions/__init__.pyi",
}

_CLASS = re.compile(r"^class\s+(\w+)\s*(?:\((.*)\))?\s*:")
_MEMBER_DEF = re.compile(r"^ +(?:async\s+)?def\s+(\w+)\s*\(")
_MEMBER_VALUE = re.compile(r"^    (\w+)\s*[:=]")


@dataclass
class StubClass:
    name: str
    bases: list[str]
    members: set[str] = field(default_factory=set)


def _find_root() -> Path | None:
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover
        return None
    try:
        dist = metadata.distribution("pyrevit-stubs-26")
    except metadata.PackageNotFoundError:
        return None
    for file in dist.files or []:
        if str(file).replace("\\", "/") == NAMESPACES["Autodesk.Revit.DB"]:
            return Path(dist.locate_file(file)).parents[3]
    return None


@cache
def root() -> Path | None:
    return _find_root()


def _parse(path: Path) -> dict[str, StubClass]:
    classes: dict[str, StubClass] = {}
    current: StubClass | None = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _CLASS.match(line)
        if match:
            bases = [b.strip().split("[")[0] for b in (match.group(2) or "").split(",") if b.strip()]
            current = classes.setdefault(match.group(1), StubClass(match.group(1), bases))
            continue
        if line and not line[0].isspace():
            current = None
            continue
        if current is None:
            continue
        member = _MEMBER_DEF.match(line) or _MEMBER_VALUE.match(line)
        if member:
            current.members.add(member.group(1))
    return classes


@cache
def namespace(name: str) -> dict[str, StubClass]:
    base = root()
    if base is None:
        return {}
    path = base / NAMESPACES[name]
    return _parse(path) if path.exists() else {}


def find_class(class_name: str, namespaces: tuple[str, ...] = tuple(NAMESPACES)) -> StubClass | None:
    for ns in namespaces:
        found = namespace(ns).get(class_name)
        if found is not None:
            return found
    return None


def has_member(class_name: str, member: str, namespaces: tuple[str, ...] = tuple(NAMESPACES)) -> bool:
    """True when `class_name` (or one of its stub base classes) declares `member`. The class is looked up in
    `namespaces`; its bases anywhere (UI.Events classes derive from DB.Events ones)."""
    seen: set[str] = set()
    pending = [class_name]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        stub = find_class(current, namespaces) if current == class_name else find_class(current)
        if stub is None:
            continue
        if member in stub.members:
            return True
        pending.extend(stub.bases)
    return False


def all_member_names() -> set[str]:
    names: set[str] = set()
    for ns in NAMESPACES:
        for stub in namespace(ns).values():
            names |= stub.members
            names.add(stub.name)
    return names
