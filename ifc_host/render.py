"""Views of an IFC model as PNG images, rendered in a child process.

Views
    A storey's Name (e.g. "Level 2") is a *plan*: the storey's elements cut by a horizontal plane 1.2 m
    above the storey's level. Cut walls, columns and slabs are filled dark, doors blue with their swing
    (drawn toward the door's local +y) and mark (``Tag``), windows light blue, spaces pale with their
    Name and LongName, and elements entirely below the cut (slabs, furniture) as grey outlines.
    "3D" is an *axonometric* of the whole model (isometric, from the south-west, above; spaces and
    openings left out) and "3D: <storey>" the same for one storey's elements; use these when a change
    is vertical or otherwise not visible in plan. ``view=None`` picks the lowest storey holding any of
    ``element_ids``, else the lowest storey (a model without storeys gets "3D").
Highlighting
    Elements listed in ``element_ids`` are drawn in ``HIGHLIGHT`` (filled when cut; a thick outline
    when only their footprint shows; spaces get a tint and a HIGHLIGHT outline). In the axonometric,
    all other elements are ghosted and the highlighted ones painted on top. The title says how many
    highlighted elements the view shows and how many it could not (other storeys, deleted, no body).
Size
    The image's long edge is exactly ``max_px``; a title bar (view name, legend) takes the top.
Isolation
    IfcOpenShell geometry can abort the whole process, so each render runs in a fresh interpreter
    (``python -m ifc_host.render_child``, never a fork: callers are multi-threaded). A crash, a timeout
    or any failure in the child raises ``RenderError``; the caller is never taken down.
    ``render_view_from_bytes`` renders a model held in memory (e.g. ``file.to_string()``) by writing
    it to a private temporary file first.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ifc_host.render_canvas import HIGHLIGHT

MIN_PX, MAX_PX = 16, 8000
CHILD_COMMAND: Sequence[str] = (sys.executable, "-m", "ifc_host.render_child")
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)
_STDERR_TAIL = 600

__all__ = ["HIGHLIGHT", "RenderError", "RenderedView", "render_view", "render_view_from_bytes"]


@dataclass(frozen=True)
class RenderedView:
    png: bytes
    width: int
    height: int
    view: str


class RenderError(RuntimeError):
    """The view could not be rendered (unknown view, unreadable model, crash or timeout of the renderer)."""


def render_view(model_path: str, view: str | None, element_ids: list[int], max_px: int,
                timeout_s: float = 60) -> RenderedView:
    """Render a view of the IFC file at ``model_path`` (see the module docstring)."""
    if not MIN_PX <= int(max_px) <= MAX_PX:
        raise RenderError(f"max_px must be between {MIN_PX} and {MAX_PX}, got {max_px}")
    if not Path(model_path).is_file():
        raise RenderError(f"no model file at {model_path}")
    with tempfile.TemporaryDirectory(prefix="nexus-render-") as work:
        return _run_child(str(Path(model_path).resolve()), view, element_ids, int(max_px), timeout_s, Path(work))


def render_view_from_bytes(model_text: str | bytes, view: str | None, element_ids: list[int], max_px: int,
                           timeout_s: float = 60) -> RenderedView:
    """Render a view of a model given as IFC-SPF text (``ifcopenshell.file.to_string()``)."""
    if not MIN_PX <= int(max_px) <= MAX_PX:
        raise RenderError(f"max_px must be between {MIN_PX} and {MAX_PX}, got {max_px}")
    data = model_text.encode("utf-8") if isinstance(model_text, str) else model_text
    with tempfile.TemporaryDirectory(prefix="nexus-render-") as work:
        model_path = Path(work) / "model.ifc"
        model_path.write_bytes(data)
        return _run_child(str(model_path), view, element_ids, int(max_px), timeout_s, Path(work))


def _run_child(model_path: str, view: str | None, element_ids: list[int], max_px: int, timeout_s: float,
               work: Path) -> RenderedView:
    png_path, result_path = work / "view.png", work / "result.json"
    request = {"model_path": model_path, "view": view, "element_ids": [int(i) for i in element_ids],
               "max_px": max_px, "png_path": str(png_path), "result_path": str(result_path)}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    what = f"view {view!r}" if view is not None else "the default view"
    try:
        completed = subprocess.run(list(CHILD_COMMAND), input=json.dumps(request).encode("utf-8"),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                                   timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise RenderError(f"rendering {what} timed out after {timeout_s:g} s (the renderer was stopped)") from exc
    except OSError as exc:
        raise RenderError(f"could not start the renderer: {exc}") from exc

    stderr = completed.stderr.decode("utf-8", "replace").strip()
    tail = f": {stderr[-_STDERR_TAIL:]}" if stderr else ""
    if completed.returncode < 0:
        raise RenderError(f"the renderer crashed while rendering {what} ({_signal_name(-completed.returncode)})"
                          f"{tail}")
    try:
        result = json.loads(result_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise RenderError(f"the renderer exited with code {completed.returncode} without a result{tail}") from None
    if not result.get("ok"):
        raise RenderError(str(result.get("error") or "rendering failed"))
    return RenderedView(png=png_path.read_bytes(), width=int(result["width"]), height=int(result["height"]),
                        view=str(result["view"]))


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
