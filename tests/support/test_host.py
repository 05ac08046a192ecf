"""A protocol-conformant test host: an in-memory document behind a real websocket client.

It models what matters of a real host: scripts run against a copy of the document that is committed
only when an `automate` script succeeds (a failure leaves it exactly as it was; `collect` never
commits), changes are reported as exact added/modified/deleted id sets, the stamped epilogue runs
after the script with `nexus_changes()`, and views export as real PNGs. Knobs let tests make it slow,
silent or wrong.
"""
from __future__ import annotations

import base64
import copy
import io
import json
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import websocket
from PIL import Image, ImageDraw

from cloud.grounding.index import ApiEntry, ApiIndex
from cloud.hosts.base import (
    DIRECTIVE_PREFIX,
    PYTHON3,
    ApiIndexSource,
    ScriptDialect,
    ViewRequest,
    split_epilogue_output,
)
from cloud.hosts.hello import Hello


class Document:
    """Elements by id: {"class", "name", "level"}. Scripts see it as `doc`."""

    def __init__(self, elements: dict[int, dict[str, Any]] | None = None):
        self.elements = elements if elements is not None else {}
        self.next_id = max(self.elements, default=100) + 1

    def add(self, cls: str, name: str, level: str = "Level 1") -> int:
        element_id = self.next_id
        self.next_id += 1
        self.elements[element_id] = {"class": cls, "name": name, "level": level}
        return element_id

    def delete(self, element_id: int) -> None:
        del self.elements[element_id]

    def by_class(self, cls: str) -> list[int]:
        return sorted(i for i, e in self.elements.items() if e["class"] == cls)


def sample_document() -> Document:
    doc = Document()
    for level in ("Level 1", "Level 2"):
        for n in range(3):
            doc.add("Door", f"D{n + 1}", level)
        doc.add("Wall", "Generic 200", level)
    return doc


@dataclass
class TestHost:
    __test__ = False  # not a pytest test class
    ws_url: str
    token: str
    document: Document = field(default_factory=sample_document)
    delay_s: float = 0.0  # answer execute this late
    silent: bool = False  # never answer execute
    received: list[dict[str, Any]] = field(default_factory=list)
    host_id: str | None = None
    host_app: str = "test"
    capabilities: tuple[str, ...] = ("hold", "context")
    external_changes: dict[str, Any] | None = None  # reported once, with the next execute_result
    undrawn: int | None = None  # reported with each view image, as the IFC host counts elements it could not draw
    simplified: int | None = None  # and those it drew as a coarser body of theirs, out of time for their shape
    boxed: int | None = None  # and those it drew as boxes, out of time for their shape
    sketched: int | None = None  # and those it drew from their footprint or axis
    building: int | None = None  # and of those, how many it is building in the background for a later view

    def __post_init__(self) -> None:
        self._ws: websocket.WebSocket | None = None
        self._thread: threading.Thread | None = None
        self._send_lock = threading.Lock()
        self.welcomed = threading.Event()
        self.held: dict[str, tuple[Document, dict[str, Any]]] = {}  # request_id -> (uncommitted document, result)
        self.decided_here: dict[str, str] = {}

    # connection
    def start(self) -> TestHost:
        self._ws = websocket.create_connection(self.ws_url, header=[f"Authorization: Bearer {self.token}"], timeout=30,
                                               skip_utf8_validation=True)  # its pure-Python check costs ~0.5 ms/frame
        self.send({"type": "hello", "host_app": self.host_app, "host_version": "test-1", "runtime_version": "1.0",
                   "python_version": sys.version.split()[0], "document": {"title": "Test document"},
                   "capabilities": list(self.capabilities),
                   **({"host_id": self.host_id} if self.host_id else {})})
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        if not self.welcomed.wait(10):
            raise TimeoutError("no welcome from the server")
        return self

    def stop(self) -> None:
        if self._ws is not None:
            try:
                self._ws.close()
            except Exception:
                pass

    def send(self, message: dict[str, Any] | str) -> None:
        with self._send_lock:
            self._ws.send(message if isinstance(message, str) else json.dumps(message))

    def _serve(self) -> None:
        while True:
            try:
                raw = self._ws.recv()
            except Exception:
                return
            if not raw:
                continue
            message = json.loads(raw)
            self.received.append(message)
            kind = message.get("type")
            if kind == "welcome":
                self.host_id = message["host_id"]
                self.welcomed.set()
            elif kind == "execute":
                threading.Thread(target=self._answer_execute, args=(message,), daemon=True).start()
            elif kind == "export_view":
                self.send(self.export_view(message))
            elif kind == "decide":
                self.send(self.decide(message))
            elif kind == "context":
                self.send({"type": "context_result", "request_id": message["request_id"], "ok": True,
                           "context": {"document": "Test document", "levels": [
                               {"name": "Level 1", "elevation": 0.0}, {"name": "Level 2", "elevation": 3.5}],
                               "active_view": "Level 1", "selection": [101],
                               "counts": {c: len(self.document.by_class(c)) for c in ("Door", "Wall")}}})
            elif kind == "ping":
                self.send({"type": "pong"})

    def _answer_execute(self, message: dict[str, Any]) -> None:
        if self.silent:
            return
        if self.delay_s:
            time.sleep(self.delay_s)
        try:
            self.send(self.execute(message))
        except websocket.WebSocketConnectionClosedException:
            pass  # the test stopped this host while it was answering: nobody waits for the answer now

    # primitives
    def execute(self, message: dict[str, Any]) -> dict[str, Any]:
        started = time.monotonic()
        working = copy.deepcopy(self.document)
        out = io.StringIO()
        result: dict[str, Any] = {"type": "execute_result", "request_id": message["request_id"], "ok": True,
                                  "committed": False, "stdout": "", "failures": [],
                                  "changes": {"added": [], "modified": [], "deleted": []}, "duration_ms": 0}
        try:
            exec(compile(message["code"], "<script>", "exec"), {"doc": working, "print": _printer(out)})
        except Exception as exc:
            tb = traceback.extract_tb(exc.__traceback__)
            line = next((f.lineno for f in reversed(tb) if f.filename == "<script>"), None)
            result.update(ok=False, error={"type": type(exc).__name__, "message": str(exc), "line": line,
                                           "traceback": "".join(traceback.format_exception(exc))})
        result["stdout"] = out.getvalue()
        if self.external_changes:
            result["external_changes"], self.external_changes = self.external_changes, None
        if result["ok"]:
            changes = _diff(self.document, working)
            result["changes"] = changes
            if message["mode"] == "automate":
                if message.get("epilogue"):
                    result["epilogue_stdout"] = _run_epilogue(message["epilogue"]["code"], working, changes)
                if message.get("hold"):
                    result["held"] = True
                    self.held[message["request_id"]] = (working, result)
                else:
                    self.document = working
                    result["committed"] = True
        result["duration_ms"] = (time.monotonic() - started) * 1000
        return result

    def decide_here(self, request_id: str, decision: str) -> None:
        """The person decides in the host itself (as in Revit's review window); the cloud is told."""
        self.decided_here[request_id] = decision
        self.send({"type": "decided", "request_id": request_id, "decision": decision, "by": "the person in the host"})

    def decide(self, message: dict[str, Any]) -> dict[str, Any]:
        working, result = self.held.pop(message["request_id"], (None, None))
        if working is None:
            return {"type": "error", "request_id": message["request_id"], "message": "nothing is held"}
        # A decision taken in the host came first and wins over the cloud's.
        decision = self.decided_here.pop(message["request_id"], message["decision"])
        keep = decision == "keep"
        if keep:
            self.document = working
        by = "the person in the host" if decision != message["decision"] else "the cloud"
        return {**result, "held": False, "committed": keep, "details": {"decision": decision, "decided_by": by}}

    def export_view(self, message: dict[str, Any]) -> dict[str, Any]:
        size = message["max_px"]
        image = Image.new("RGB", (size, size * 3 // 4), "white")
        draw = ImageDraw.Draw(image)
        for n in range(len(message.get("element_ids", []))):
            draw.rectangle([10 + 20 * n, 10, 25 + 20 * n, 25], fill=(255, 120, 0))
        buffer = io.BytesIO()
        image.save(buffer, "PNG")
        return {"type": "export_view_result", "request_id": message["request_id"], "ok": True,
                "png_base64": base64.b64encode(buffer.getvalue()).decode(), "width": image.width,
                "height": image.height, "view": message.get("view") or "Level 1",
                **({"undrawn": self.undrawn} if self.undrawn is not None else {}),
                **({"simplified": self.simplified} if self.simplified is not None else {}),
                **({"boxed": self.boxed} if self.boxed is not None else {}),
                **({"sketched": self.sketched} if self.sketched is not None else {}),
                **({"building": self.building} if self.building is not None else {})}


def _printer(out: io.StringIO):
    def _print(*args: Any, sep: str = " ", end: str = "\n", **_: Any) -> None:
        out.write(sep.join(str(a) for a in args) + end)
    return _print


def _diff(before: Document, after: Document) -> dict[str, list[int]]:
    old, new = before.elements, after.elements
    return {"added": sorted(set(new) - set(old)), "deleted": sorted(set(old) - set(new)),
            "modified": sorted(i for i in set(old) & set(new) if old[i] != new[i])}


def _run_epilogue(code: str, doc: Document, changes: dict[str, list[int]]) -> str:
    out = io.StringIO()
    exec(compile(code, "<epilogue>", "exec"), {"doc": doc, "print": _printer(out), "nexus_changes": lambda: changes})
    return out.getvalue()


TEST_EPILOGUE = f'''
changes = nexus_changes()
touched = changes["added"] + changes["modified"]
if len(touched) <= 15:
    print(str(len(touched)) + " element(s) changed:")
    for i in touched:
        e = doc.elements[i]
        print("- #" + str(i) + " " + e["class"] + " | " + e["name"] + " | " + e["level"])
else:
    groups = {{}}
    for i in touched:
        groups.setdefault(doc.elements[i]["class"], []).append(i)
    for cls, ids in sorted(groups.items()):
        print("- " + str(len(ids)) + "x " + cls + " | e.g. #" + str(ids[0]))
if changes["deleted"]:
    print(str(len(changes["deleted"])) + " element(s) deleted")
import json as _json
print({DIRECTIVE_PREFIX!r} + _json.dumps({{"geometry_changed": bool(changes["added"] or changes["deleted"]),
                                           "element_ids": touched[:50]}}))
'''


class TestProvider:
    """The capability provider for the test host (host_app "test"), registered only from tests/: a host
    is one module like this plus one registration, and the production contract knows nothing of it."""

    __test__ = False

    host_app = "test"
    capability_version = "test-1.0"
    display_name = "Test host"
    referred_to_as = "the test host"
    busy_hint = "If the test host stays busy, stop its delay (a test host has no dialogs)."

    def script_dialect(self, hello: Hello) -> ScriptDialect:
        return PYTHON3

    def system_prompt_fragment(self, hello: Hello) -> str:
        return (f"Scripts see `doc`, an in-memory test document \"{hello.title}\" "
                "(doc.add, doc.delete, doc.by_class, doc.elements).")

    def views_description(self, hello: Hello) -> str:
        return f"Views on the test host: {', '.join(repr(v) for v in TEST_VIEWS)} (any other name is drawn as well)."

    def api_index_source(self, hello: Hello) -> ApiIndexSource:
        return ApiIndexSource("test:1", lambda: ApiIndex(list(TEST_API), "test document API"))

    def build_task_automation_epilogue(self) -> str:
        return TEST_EPILOGUE

    def view_to_capture(self, result: dict[str, Any]) -> ViewRequest | None:
        _, directives = split_epilogue_output(result.get("epilogue_stdout"))
        if not directives.get("geometry_changed"):
            return None
        return ViewRequest("Level 1", directives.get("element_ids", []))


TEST_VIEWS = ("Level 1", "Level 2")
TEST_API = (
    ApiEntry("Document.add", "method", "(cls: str, name: str, level: str = 'Level 1') -> int",
             "Add an element and return its new id."),
    ApiEntry("Document.delete", "method", "(element_id: int) -> None", "Delete an element by id."),
    ApiEntry("Document.by_class", "method", "(cls: str) -> list[int]", "The ids of a class's elements, sorted."),
    ApiEntry("Document.elements", "property", ": dict[int, dict]", "Elements by id: {class, name, level}."),
)
