"""Every Revit API member the runtime (and the Revit epilogue) uses exists in the Revit 2026 API, as
described by the `pyrevit-stubs-26` package (read from site-packages, never copied here).

Two complementary checks:
- static: attribute chains rooted at Revit imports (`DB.Transaction`, `DB.TransactionStatus.Committed`,
  `ExternalEvent.Create`...) in the extension and the epilogue must name real classes and members;
- through the fake: the runtime only ever ran against fake_revit, so whatever it called exists there;
  every public member of the fake's Revit classes must exist in the stubs (the fake is not richer than
  Revit), except members Revit 2026 removed that the runtime reads only on older versions.
"""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from tests.revit import revit_stubs
from tests.revit.fake_revit import FakeRevit, appservices, db, events, exceptions, ui

pytestmark = pytest.mark.skipif(revit_stubs.root() is None,
                                reason="pyrevit-stubs-26 is not installed: cannot check Revit API member names")

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted((REPO / "NexusAI.extension").rglob("*.py")) + [REPO / "cloud/hosts/epilogues/revit_epilogue.py"]
REVIT_NAMESPACES = ("Autodesk.Revit.DB", "Autodesk.Revit.UI", "Autodesk.Revit.DB.Events", "Autodesk.Revit.UI.Events",
                    "Autodesk.Revit.ApplicationServices", "Autodesk.Revit.Exceptions")
# Read only when running on an older Revit (see nexus_runtime/ids.py and the epilogue's _nx_id).
OLDER_VERSIONS_ONLY = {("ElementId", "IntegerValue")}
# Scripts get `doc`, `uidoc`, `DB` as globals: in the epilogue those names are Revit objects too.
EPILOGUE_GLOBALS = {"DB": ("namespace", "Autodesk.Revit.DB")}


def revit_bindings(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """Local name -> ("namespace", ns) or ("class", "ns:Class") for imports from Autodesk.Revit."""
    bindings: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("Autodesk.Revit"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in REVIT_NAMESPACES:
                    bindings[alias.asname or alias.name] = ("namespace", full)
                else:
                    bindings[alias.asname or alias.name] = ("class", f"{node.module}:{alias.name}")
    return bindings


def attribute_chain(node: ast.Attribute) -> list[str] | None:
    parts = []
    current: ast.AST = node
    while isinstance(current, ast.Attribute):
        parts.append(current.attr)
        current = current.value
    if isinstance(current, ast.Name):
        return [current.id, *reversed(parts)]
    return None


def revit_references(path: Path) -> set[tuple[str, str, str | None]]:
    """(namespace, class, member or None) referenced through Revit imports in one source file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bindings = revit_bindings(tree)
    if path.name == "revit_epilogue.py":
        bindings.update(EPILOGUE_GLOBALS)
    found: set[tuple[str, str, str | None]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and bindings.get(node.id, ("", ""))[0] == "class":
            namespace, cls = bindings[node.id][1].split(":")
            found.add((namespace, cls, None))
        if not isinstance(node, ast.Attribute):
            continue
        chain = attribute_chain(node)
        if not chain or chain[0] not in bindings:
            continue
        kind, target = bindings[chain[0]]
        if kind == "namespace" and len(chain) >= 2:
            found.add((target, chain[1], chain[2] if len(chain) >= 3 else None))
        elif kind == "class":
            namespace, cls = target.split(":")
            found.add((namespace, cls, chain[1]))
    return found


def all_references() -> set[tuple[str, str, str | None]]:
    found: set[tuple[str, str, str | None]] = set()
    for path in SOURCES:
        found |= revit_references(path)
    return found


def member_exists(namespace: str, cls: str, member: str) -> bool:
    spaces = (namespace,)
    candidates = [member, "add_" + member]  # C# events appear as add_X/remove_X
    if member.startswith(("get_", "set_")):
        candidates.append(member[4:])  # IronPython's accessor for an indexed property, e.g. get_Parameter
    return (any(revit_stubs.has_member(cls, name, spaces) for name in candidates)
            or revit_stubs.find_class(member, spaces) is not None)  # nested classes are flattened in the stubs


def test_the_static_scan_finds_the_runtime_s_revit_calls():
    references = all_references()
    for expected in [("Autodesk.Revit.DB", "Transaction", None), ("Autodesk.Revit.DB", "TransactionStatus", "Committed"),
                     ("Autodesk.Revit.UI", "ExternalEvent", "Create"),
                     ("Autodesk.Revit.DB", "FailureProcessingResult", "ProceedWithRollBack"),
                     ("Autodesk.Revit.DB", "ImageExportOptions", "GetFileName"),
                     ("Autodesk.Revit.DB.Events", "UndoOperation", "TransactionCommitted"),
                     ("Autodesk.Revit.DB", "TransactionGroup", None),
                     ("Autodesk.Revit.DB", "TemporaryViewMode", "TemporaryHideIsolate"),
                     ("Autodesk.Revit.DB.Events", "FileExportingEventArgs", None),
                     ("Autodesk.Revit.DB.Events", "UndoOperation", "TransactionUndone"),
                     ("Autodesk.Revit.UI.Events", "DialogBoxShowingEventArgs", None)]:
        assert expected in references


def test_every_revit_class_and_member_the_sources_name_exists_in_revit_2026():
    missing = []
    for namespace, cls, member in sorted(all_references(), key=str):
        if revit_stubs.find_class(cls, (namespace,)) is None:
            missing.append(f"{namespace}.{cls}")
        elif member is not None and not member_exists(namespace, cls, member):
            missing.append(f"{namespace}.{cls}.{member}")
    assert missing == []


FAKE_MODULES = {db: "Autodesk.Revit.DB", ui: "Autodesk.Revit.UI", events: "Autodesk.Revit.DB.Events",
                appservices: "Autodesk.Revit.ApplicationServices", exceptions: "Autodesk.Revit.Exceptions"}
FAKE_ONLY = {"InternalElement", "EventSlot", "EnumValue", "RevitApiException", "Session", "NetList"}
NAMESPACE_OF = {"ViewActivatedEventArgs": "Autodesk.Revit.UI.Events", "Selection": "Autodesk.Revit.UI.Selection",
                "DialogBoxShowingEventArgs": "Autodesk.Revit.UI.Events",
                "TaskDialogShowingEventArgs": "Autodesk.Revit.UI.Events",
                "MessageBoxShowingEventArgs": "Autodesk.Revit.UI.Events"}


def fake_classes() -> list[tuple[str, type]]:
    found = []
    for module, namespace in FAKE_MODULES.items():
        for name, value in vars(module).items():
            if inspect.isclass(value) and not name.startswith("_") and name not in FAKE_ONLY \
                    and value.__module__ == module.__name__:
                found.append((NAMESPACE_OF.get(name, namespace), value))
    return found


def public_members(value: object) -> set[str]:
    names = set()
    for klass in inspect.getmro(value if inspect.isclass(value) else type(value)):
        if klass is object or klass.__module__ == "builtins":
            continue
        names |= {n for n in vars(klass) if not n.startswith("_")}
    if not inspect.isclass(value):
        names |= {n for n in vars(value) if not n.startswith("_")}
    return names


def stub_problems(namespace: str, cls: str, members: set[str]) -> list[str]:
    if revit_stubs.find_class(cls, (namespace,)) is None:
        return [f"{namespace}.{cls}"]
    return [f"{namespace}.{cls}.{m}" for m in sorted(members)
            if (cls, m) not in OLDER_VERSIONS_ONLY and not member_exists(namespace, cls, m)]


def test_the_fake_only_offers_classes_and_members_revit_2026_has():
    problems = []
    for namespace, cls in fake_classes():
        problems += stub_problems(namespace, cls.__name__, public_members(cls))
    assert problems == []


def test_the_fake_s_live_objects_only_carry_revit_2026_members():
    revit = FakeRevit()
    doc = revit.doc
    samples = list(doc._elements.values()) + [revit.app, revit.uiapp, revit.uidoc, doc, db.Transaction(doc, "t"),
                                              db.ImageExportOptions(), db.FailureHandlingOptions(),
                                              next(iter(doc._elements.values())).Category,
                                              db.TransactionGroup(doc, "g"), db.DocumentSet([doc]),
                                              events.DocumentSavingEventArgs(doc),
                                              events.DocumentSavingAsEventArgs(doc, "C:/a.rvt"),
                                              events.DocumentClosingEventArgs(doc, 1),
                                              events.DocumentSynchronizingWithCentralEventArgs(doc),
                                              events.FileExportingEventArgs(doc, "C:/a", db.ImportExportFileFormat.DWG),
                                              events.TaskDialogShowingEventArgs("id", "text", (8,)),
                                              events.MessageBoxShowingEventArgs("text", 1, (1, 2))]
    problems = set()
    for sample in samples:
        namespace = next((ns for module, ns in FAKE_MODULES.items() if type(sample).__module__ == module.__name__), None)
        namespace = NAMESPACE_OF.get(type(sample).__name__, namespace)
        if namespace is None or type(sample).__name__ in FAKE_ONLY:
            continue
        problems |= set(stub_problems(namespace, type(sample).__name__, public_members(sample)))
    assert sorted(problems) == []


def test_the_client_websocket_members_used_exist_in_the_net_stubs():
    source = (REPO / "NexusAI.extension/lib/nexus_runtime/transport_clientwebsocket.py").read_text()
    stub = revit_stubs.root() / "System" / "Net" / "WebSockets.py"
    text = stub.read_text(encoding="utf-8", errors="replace")
    for member in ["ConnectAsync", "SendAsync", "ReceiveAsync", "CloseOutputAsync", "Abort", "Dispose",
                   "SetRequestHeader", "KeepAliveInterval", "EndOfMessage", "MessageType", "Count", "NormalClosure"]:
        assert member in source, member
        assert f" def {member}(" in text or f" {member}=" in text, member
