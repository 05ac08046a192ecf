"""The IFC host's `export_scene` command: a GLB of a view, of elements or of a change (protocol in docs/scene.md).

A scene of a change needs the model as it was before it (deleted elements, previous placements), which the
host no longer has once the automation committed. So before each automation the host copies the model file
as it stands (``BeforeCopies``); the copy of the last few automations is kept, keyed by the execute's
request id, and ``export_scene`` names it in ``before_of``. An automation that changed nothing drops its copy.

A change held under ``ask`` is shown from the held (uncommitted) model, which only the keeper has: the host
writes it to a file (``HeldSnapshot``) once per hold and gives every scene and view of that hold the same file,
so the render server that opened it keeps it open with its meshes and the next request of the hold reads
nothing again. The file is rewritten when the hold changes or the file is not the one written (its signature),
and removed by the first view or scene after the hold ended (views and scenes are built one at a time, so
never while one reads it).
"""
from __future__ import annotations

import base64
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ifc_host import protocol
from ifc_host.file_identity import file_signature
from ifc_host.scene import DEFAULT_MAX_BYTES, RenderError, build_scene_file

KEPT_BEFORE_COPIES = 8


class BeforeCopies:
    """The model files as they were before the last few automations (a private temporary folder)."""

    def __init__(self, keep: int = KEPT_BEFORE_COPIES) -> None:
        self._keep = keep
        self._folder: Path | None = None
        self._copies: OrderedDict[str, Path] = OrderedDict()
        self._made = 0
        self._lock = threading.Lock()

    def keep(self, request_id: str, model_path: Path) -> None:
        with self._lock:
            if self._folder is None:
                self._folder = Path(tempfile.mkdtemp(prefix="nexus-before-"))
            self._made += 1
            target = self._folder / f"before-{self._made}.ifc"
            try:
                shutil.copyfile(model_path, target)
            except OSError:  # a full disk costs the ghosts of this change, not the automation
                return
            self._copies[request_id] = target
            while len(self._copies) > self._keep:
                self._copies.popitem(last=False)[1].unlink(missing_ok=True)

    def drop(self, request_id: str) -> None:
        with self._lock:
            path = self._copies.pop(request_id, None)
        if path is not None:
            path.unlink(missing_ok=True)

    def get(self, request_id: str | None) -> Path | None:
        with self._lock:
            path = self._copies.get(request_id) if request_id else None
        return path if path is not None and path.is_file() else None

    def close(self) -> None:
        with self._lock:
            folder, self._folder = self._folder, None
            self._copies.clear()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


class HeldSnapshot:
    """The held model of the current hold as one file, written once per hold (see the module docstring)."""

    def __init__(self) -> None:
        self._folder: Path | None = None
        self._held: str | None = None
        self._signature: tuple[int, int, int, int] | None = None
        self._made = 0
        self._lock = threading.Lock()
        self.writes = 0  # snapshots written in this host's life (tests and benchmarks)

    def path(self, held_request_id: str, write: Callable[[Path], None]) -> Path:
        """The file holding the model of hold `held_request_id`, written by `write(path)` when it is not yet."""
        with self._lock:
            current = self._current()
            if current is not None and self._held == held_request_id and file_signature(current) == self._signature:
                return current
            self._forget_file()
            if self._folder is None:
                self._folder = Path(tempfile.mkdtemp(prefix="nexus-held-"))
            self._made += 1
            # A new name per hold: a render server keeps models by path and signature, never an older hold's.
            target = self._folder / f"held-{self._made}.ifc"
            try:
                write(target)
            except BaseException:
                target.unlink(missing_ok=True)
                raise
            self._held, self._signature = held_request_id, file_signature(target)
            self.writes += 1
            return target

    def release(self) -> None:
        """No hold now (kept, discarded, expired): its file goes."""
        with self._lock:
            self._forget_file()

    def close(self) -> None:
        with self._lock:
            self._forget_file()
            folder, self._folder = self._folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    def _current(self) -> Path | None:
        return self._folder / f"held-{self._made}.ifc" if self._folder is not None and self._held else None

    def _forget_file(self) -> None:
        current = self._current()
        if current is not None:
            current.unlink(missing_ok=True)
        self._held = self._signature = None


def export_scene(message: dict[str, Any], model_path: Path, before: BeforeCopies, timeout_s: float) -> dict[str, Any]:
    """The export_scene_result for one export_scene message, built from the model at `model_path`."""
    request_id = message["request_id"]
    before_path = before.get(message.get("before_of"))
    changes = message.get("changes") or {}
    try:
        scene = build_scene_file(
            str(model_path), message.get("view"), list(message.get("element_ids") or []), changes,
            str(before_path) if before_path else None, global_ids=list(message.get("global_ids") or []),
            max_bytes=int(message.get("max_bytes") or DEFAULT_MAX_BYTES),
            time_budget_s=float(message.get("time_budget_s") or min(45.0, timeout_s * 0.75)), timeout_s=timeout_s,
            refs=[(str(r["name"]), str(r["path"])) for r in message.get("refs") or ()])
    except RenderError as exc:
        return failure(request_id, str(exc))
    reply: dict[str, Any] = {
        "type": "export_scene_result", "request_id": request_id, "ok": True,
        "glb_base64": base64.b64encode(scene.glb).decode("ascii"), "view": scene.view, "nodes": scene.nodes,
        "counts": scene.counts, "undrawn": scene.undrawn, "omitted_for_size": scene.omitted_for_size,
        "omitted_for_time": scene.omitted_for_time}
    if message.get("refs"):
        reply["references"] = scene.references
    if message.get("before_of") and before_path is None:
        reply["before_missing"] = True
    return protocol.checked(reply)


def failure(request_id: str, reason: str) -> dict[str, Any]:
    return protocol.checked({"type": "export_scene_result", "request_id": request_id, "ok": False, "error": reason})
