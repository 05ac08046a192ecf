"""Views of an IFC model as PNG images, rendered in a child process.

Views
    A storey's Name (e.g. "Level 2") is a *plan*: the storey's elements cut by a horizontal plane 1.2 m
    above the storey's level. Cut walls, columns and slabs are filled dark, doors blue with their swing
    (drawn toward the door's local +y) and mark (``Tag``), windows light blue, spaces pale with their
    Name and LongName, and elements entirely below the cut (slabs, furniture) as grey outlines.
    "3D" is an *axonometric* of the whole model (isometric, from the south-west, above; spaces and
    openings left out) and "3D: <storey>" the same for one storey's elements; use these when a change
    is vertical or otherwise not visible in plan. "North elevation", "East elevation", "South elevation"
    and "West elevation" are orthographic views of the whole model from that side (project north is +y),
    for facade changes. A storey is named by its Name or by ``#<step id>`` (the only way for an unnamed
    storey or one whose Name another shares); ``render_scene.view_names`` lists every view.
    ``view=None`` picks the lowest storey holding any of ``element_ids``, else the lowest storey (a model
    without storeys gets "3D", or "Site plan" when it has an alignment). The site plan draws each
    ``IfcAlignment``'s horizontal axis over the bodies (render_alignment.py).
Highlighting
    Elements listed in ``element_ids`` are drawn in ``HIGHLIGHT`` (filled when cut; a thick outline
    when only their footprint shows; spaces get a tint and a HIGHLIGHT outline). In the axonometric,
    all other elements are ghosted and the highlighted ones painted on top. The title says how many
    highlighted elements the view shows and how many it could not (other storeys, deleted, no body).
Size
    The image's long edge is exactly ``max_px``; a title bar (view name, legend) takes the top.
Isolation
    IfcOpenShell geometry can abort the whole process, so renders run in render servers, interpreters of their
    own (``python -m ifc_host.render_child --serve``, never a fork: callers are multi-threaded; render_pool.py).
    A server keeps the models it opened and their meshes between views (render_models.py): the next view of an
    unchanged file skips the open, a committed (replaced or rewritten) file is opened anew. A native crash on one
    element costs that element, not the view: the child journals each element it builds, and a crashed
    render is run again with the offender sent to the OpenCascade kernel, or left out if that crashes too
    (render_bodies.py). What was learnt is remembered per model content, so the next render of the same
    model goes straight to the working recipe, and the elements' meshes are kept for the next view of the
    same content (render_mesh_cache.py). Elements no kernel could build are counted on the image
    ("N elements could not be drawn") and listed in ``RenderedView.undrawn``. A timeout, a crash that no
    element explains, or any other failure raises ``RenderError``; the caller is never taken down.
Budget
    A view answers within its ``timeout_s``: tessellation stops when the time left is what drawing needs
    (``_drawing_reserve_s``), and the elements it did not reach are undrawn too, counted apart on the image
    ("(N not reached in the time allowed)") and in ``RenderedView.out_of_time``; an element not reached whose
    body is an instance (one IfcMappedItem) of a body already built is placed from that mesh instead, exactly,
    and counts as drawn (render_bodies.place_instances); else from a cheaper representation of its own: a
    coarser body (its ``Body-FallBack``, a ``Body`` of a sketch or coarser level of detail: render_simplified.py),
    counted apart in ``RenderedView.simplified``, else its ``Box``, the extruded opening a window or door fills, its
    ``FootPrint`` or ``Axis`` (render_stand_ins.py), counted apart in ``RenderedView.boxed`` and
    ``RenderedView.sketched``, all said on the image; the meshes built are kept,
    so asking again gets further. Bodies of many faces (render_bodies.COSTLY_FACES) are built by the render
    server in the background (render_background.py), and a view waits for them only within its budget; the
    first view of a model content only ``FIRST_VIEW_BUDGET_S`` from the call (``NEXUS_RENDER_FIRST_VIEW_S``),
    so that it answers in seconds after the open however detailed the model's windows are. Those not built by
    then are drawn as their stand-ins, listed in ``RenderedView.later`` too, said on the image as being built
    for the next view; the next view of the model draws them from the mesh cache, never building them twice. A view whose elements all failed to draw is a ``RenderError`` saying so
    ("nothing of view ... could be drawn"), never a blank image passed off as the view; a plan whose bodies all
    stand above the cut draws their outlines, as a roof plan, and says so in its title.
    ``render_view_from_bytes`` renders a model held in memory (e.g. ``file.to_string()``) by writing
    it to a private temporary file first.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ifc_host import render_pool
from ifc_host.file_identity import file_signature
from ifc_host.render_palette import HIGHLIGHT

MIN_PX, MAX_PX = 16, 8000
CHILD_COMMAND: Sequence[str] = (sys.executable, "-m", "ifc_host.render_child")  # one request, then exits
SERVER_COMMAND: Sequence[str] = (*CHILD_COMMAND, "--serve")  # what renders run in (render_pool.py)
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)
_STDERR_TAIL = 600
MAX_RECOVERIES = 16  # crashed attempts of one render before giving up
_REMEMBERED_MODELS = 32
DRAWING_RESERVE_SHARE = 0.3  # of the view's timeout, kept for drawing once tessellation stops
STAND_IN_SHARE = 0.5  # of that reserve, what stand-ins built by the kernel (simplified, swept) may take
MAX_DRAWING_RESERVE_S = 60.0
_MESH_MODELS = 4  # model contents whose meshes are kept (each folder at most render_mesh_cache.MAX_FOLDER_BYTES)

PREPARE_ENV = "NEXUS_RENDER_PREPARE_MB"  # models at least this big are prepared (render.prepare); "off": never
DEFAULT_PREPARE_MB = 8.0  # smaller models open in about a second: nothing to win
PREPARE_TIMEOUT_S = 300.0  # in the background: a big file on a loaded machine takes minutes
PREPARE_MAX_THREADS = 2  # the first view waits for the prepare: Revit's windows build in parallel on an idle core
# The first view of a model content waits at most this long (from the call) for its costly bodies (render_bodies
# COSTLY_FACES): those not built by then are drawn as their stand-ins while the render server goes on building them
# for the next views. Issue 25 item 7 asks for BasicHouse's first plan within 4 s of the host's open; its six
# 87,000-face windows alone are 7.8 s of CPU, and drawing the plan takes about a second after this budget.
FIRST_VIEW_BUDGET_S = 2.5
FIRST_VIEW_ENV = "NEXUS_RENDER_FIRST_VIEW_S"  # seconds, replacing FIRST_VIEW_BUDGET_S; "off": no first-view budget

log = logging.getLogger("nexus.render")

__all__ = ["HIGHLIGHT", "RenderError", "RenderedView", "prepare", "render_view", "render_view_from_bytes"]


@dataclass(frozen=True)
class RenderedView:
    png: bytes
    width: int
    height: int
    view: str
    undrawn: tuple[int, ...] = ()  # elements of the view whose body no geometry kernel could build (or no time)
    out_of_time: tuple[int, ...] = ()  # the undrawn ones tessellation did not reach within the budget
    boxed: tuple[int, ...] = ()  # not reached in time, drawn as their Box (or the opening they fill)
    sketched: tuple[int, ...] = ()  # not reached in time, no Box: drawn from their FootPrint or Axis instead
    later: tuple[int, ...] = ()  # of those, the ones being built in the background: a later view draws them in full
    simplified: tuple[int, ...] = ()  # not reached in time, drawn as a coarser body of theirs (render_simplified.py)


@dataclass
class _Recipe:
    """How to tessellate a model so that no element crashes the renderer (learnt from crashes)."""
    careful: bool = False
    exact: set[int] = field(default_factory=set)
    skip: set[int] = field(default_factory=set)


_recipes: OrderedDict[str, _Recipe] = OrderedDict()
_recipes_lock = threading.Lock()
# Prepares under way, by model path: the file's signature and the thread (a second prepare of it waits for none).
_preparing: dict[str, tuple[tuple[int, int, int, int] | None, threading.Thread]] = {}
_preparing_lock = threading.Lock()
# Model contents a view was drawn of (by this process): the next view of one is not its first.
_viewed: OrderedDict[str, None] = OrderedDict()
_viewed_lock = threading.Lock()
# Content digests by path and file signature: hashing a 50 MB file costs a quarter of a second per view.
_content_keys: OrderedDict[tuple[str, tuple[int, int, int, int]], str] = OrderedDict()
_content_keys_lock = threading.Lock()


class _MeshFolders:
    """A folder of kept meshes for each of the last few model contents rendered by this process (under one
    temporary folder, removed at exit by the process that made it; a forked child leaves it alone)."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._root: Path | None = None
        self._owner = 0
        self._folders: OrderedDict[str, Path] = OrderedDict()
        self._lock = threading.Lock()

    def folder(self, key: str) -> Path:
        with self._lock:
            if self._root is None or self._owner != os.getpid():
                self._root, self._owner, self._folders = Path(tempfile.mkdtemp(prefix="nexus-meshes-")), os.getpid(), OrderedDict()
                atexit.register(self._remove, self._root, self._owner)
            folder = self._folders.setdefault(key, self._root / key)
            self._folders.move_to_end(key)
            while len(self._folders) > self._keep:
                shutil.rmtree(self._folders.popitem(last=False)[1], ignore_errors=True)
            return folder

    @staticmethod
    def _remove(root: Path, owner: int) -> None:
        if os.getpid() == owner:
            shutil.rmtree(root, ignore_errors=True)


_mesh_folders = _MeshFolders(keep=_MESH_MODELS)


class RenderError(RuntimeError):
    """The view could not be rendered (unknown view, unreadable model, crash or timeout of the renderer)."""


def render_view(model_path: str, view: str | None, element_ids: list[int], max_px: int,
                timeout_s: float = 60, refs: Sequence[str] = ()) -> RenderedView:
    """Render a view of the IFC file at ``model_path`` (see the module docstring); the reference models at
    ``refs`` are drawn greyed behind it in axonometric views and elevations."""
    if not MIN_PX <= int(max_px) <= MAX_PX:
        raise RenderError(f"max_px must be between {MIN_PX} and {MAX_PX}, got {max_px}")
    if not Path(model_path).is_file():
        raise RenderError(f"no model file at {model_path}")
    with tempfile.TemporaryDirectory(prefix="nexus-render-") as work:
        return _run_child(str(Path(model_path).resolve()), view, element_ids, int(max_px), timeout_s, Path(work),
                          [str(Path(r).resolve()) for r in refs])


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


def prepare(model_path: str | os.PathLike[str], timeout_s: float = PREPARE_TIMEOUT_S) -> threading.Thread | None:
    """Open a big model in a render server and tessellate its default view, in the background, so that the first
    view after a host opened (or committed) it is drawn from an open model with its meshes built. Only models of
    at least ``NEXUS_RENDER_PREPARE_MB`` (8) MB, which take seconds to open; ``off`` turns it off. A view asked
    meanwhile waits for that server rather than opening the file a second time (render_pool.py). Asked again for
    the same unchanged file while its prepare is under way, it returns that prepare's thread and starts none: the
    host calls it before its keeper opens the model, so that both opens run at once, and again once connected."""
    setting = (os.environ.get(PREPARE_ENV) or "").strip().lower()
    if setting == "off":
        return None
    try:
        threshold_mb = float(setting) if setting else DEFAULT_PREPARE_MB
    except ValueError:
        log.warning("%s=%r is not a size in MB; models are not prepared", PREPARE_ENV, setting)
        return None
    path = Path(model_path)
    try:
        if path.stat().st_size < threshold_mb * 1024 * 1024:
            return None
    except OSError:
        return None
    resolved, signature = str(path.resolve()), file_signature(path)
    with _preparing_lock:
        running = _preparing.get(resolved)
        if running is not None and running[0] == signature and running[1].is_alive():
            return running[1]  # already under way for this very file (the host's start asks twice)
        thread = threading.Thread(target=_prepare, args=(resolved, timeout_s), daemon=True, name="render-prepare")
        _preparing[resolved] = (signature, thread)
        thread.start()
    return thread


def _prepare(model_path: str, timeout_s: float) -> None:
    what = "the default view (prepared in the background)"
    try:
        key = _content_key(model_path)
        with _recipes_lock:
            known = _recipes.get(key)
            recipe = _Recipe(known.careful, set(known.exact), set(known.skip)) if known is not None else _Recipe()
        with tempfile.TemporaryDirectory(prefix="nexus-prepare-") as work:
            journal = Path(work) / "journal.txt"
            request = {"kind": "prepare", "model_path": model_path, "view": None, "element_ids": [],
                       "result_path": str(Path(work) / "result.json"), "careful": recipe.careful,
                       "exact": sorted(recipe.exact), "skip": sorted(recipe.skip), "journal_path": str(journal),
                       "cache_dir": str(_mesh_folders.folder(key)), "content_key": key,
                       "deadline": time.time() + timeout_s * (1 - DRAWING_RESERVE_SHARE),
                       # its costly bodies go straight to a background build: the first view waits for the prepare
                       "costly_deadline": time.time(), "threads": _prepare_threads(),
                       "build_threads": _prepare_threads()}
            crash = _attempt(request, what, timeout_s, timeout_s)
            if crash is not None and _learn(recipe, journal):
                _remember(key, recipe)  # the view itself goes straight to what works
    except (RenderError, OSError) as exc:
        log.info("preparing %s failed: %s", model_path, exc)


def _prepare_threads() -> int:
    """A second thread only when a core is idle: on a busy machine it costs a third more CPU and gains no time."""
    cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:
        return 1
    return max(1, min(PREPARE_MAX_THREADS, round(cores - load)))


def _run_child(model_path: str, view: str | None, element_ids: list[int], max_px: int, timeout_s: float,
               work: Path, refs: list[str] | None = None) -> RenderedView:
    """Render in a child process, recovering from native crashes one offending element at a time."""
    started = time.time()
    key = _content_key(model_path)
    budget = _first_view_budget_s(key)
    with _recipes_lock:
        known = _recipes.get(key)
        recipe = _Recipe(known.careful, set(known.exact), set(known.skip)) if known is not None else _Recipe()
    meshes = _mesh_folders.folder(key)
    what = f"view {view!r}" if view is not None else "the default view"
    deadline = time.monotonic() + timeout_s
    for attempt in range(MAX_RECOVERIES + 1):
        journal = work / f"journal-{attempt}.txt"
        request = {"model_path": model_path, "view": view, "element_ids": [int(i) for i in element_ids],
                   "max_px": max_px, "png_path": str(work / "view.png"), "result_path": str(work / "result.json"),
                   "careful": recipe.careful, "exact": sorted(recipe.exact), "skip": sorted(recipe.skip),
                   "journal_path": str(journal), "cache_dir": str(meshes), "ref_paths": refs or [],
                   "content_key": key, "build_threads": _prepare_threads()}
        if budget is not None:  # the model's first view: its costly bodies only within the first-view budget
            request["costly_deadline"] = started + budget
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        # Tessellation stops in time for the child to draw what it has and answer before the timeout.
        request["deadline"] = time.time() + remaining - _drawing_reserve_s(timeout_s)
        request["stand_in_deadline"] = request["deadline"] + STAND_IN_SHARE * _drawing_reserve_s(timeout_s)
        crash = _attempt(request, what, remaining, timeout_s)
        if crash is None:
            if recipe.careful or recipe.exact or recipe.skip:
                _remember(key, recipe)
            rendered = _read_result(work)
            _mark_viewed(key)
            return rendered
        if not _learn(recipe, journal):
            raise RenderError(crash)
    else:
        raise RenderError(f"the renderer crashed {MAX_RECOVERIES + 1} times while rendering {what}, each time on "
                          f"another element; gave up")
    raise RenderError(f"rendering {what} timed out after {timeout_s:g} s (the renderer was stopped)")


def _first_view_budget_s(key: str) -> float | None:
    """The first-view budget when no view of this model content was drawn yet (else None: the view's timeout)."""
    with _viewed_lock:
        if key in _viewed:
            return None
    setting = (os.environ.get(FIRST_VIEW_ENV) or "").strip().lower()
    if setting == "off":
        return None
    try:
        return max(0.0, float(setting)) if setting else FIRST_VIEW_BUDGET_S
    except ValueError:
        log.warning("%s=%r is not a number of seconds; the first view's budget is %g s", FIRST_VIEW_ENV, setting,
                    FIRST_VIEW_BUDGET_S)
        return FIRST_VIEW_BUDGET_S


def _mark_viewed(key: str) -> None:
    with _viewed_lock:
        _viewed[key] = None
        _viewed.move_to_end(key)
        while len(_viewed) > _REMEMBERED_MODELS:
            _viewed.popitem(last=False)


def _drawing_reserve_s(timeout_s: float) -> float:
    """Of a view's time, what is kept for drawing and answering once tessellation stops."""
    return min(max(DRAWING_RESERVE_SHARE * timeout_s, 1.0), MAX_DRAWING_RESERVE_S)


def _attempt(request: dict[str, object], what: str, remaining_s: float, timeout_s: float) -> str | None:
    """Run the request once in a render server (render_pool.py): None when it finished (rendered or reported an
    error), else why it crashed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    try:
        outcome, _ = render_pool.pool.run(SERVER_COMMAND, env, request, remaining_s)
    except render_pool.ServerTimeout as exc:
        raise RenderError(f"rendering {what} timed out after {timeout_s:g} s (the renderer was stopped)") from exc
    except OSError as exc:
        raise RenderError(f"could not start the renderer: {exc}") from exc
    tail = f": {outcome.stderr_tail[-_STDERR_TAIL:]}" if outcome.stderr_tail else ""
    if not outcome.answered and outcome.returncode is not None and outcome.returncode < 0:
        return f"the renderer crashed while rendering {what} ({_signal_name(-outcome.returncode)}){tail}"
    if not Path(str(request["result_path"])).is_file():
        raise RenderError(f"the renderer exited with code {outcome.returncode} without a result{tail}")
    return None


def _read_result(work: Path) -> RenderedView:
    try:
        result = json.loads((work / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise RenderError("the renderer left an unreadable result") from None
    if not result.get("ok"):
        raise RenderError(str(result.get("error") or "rendering failed"))
    return RenderedView(png=(work / "view.png").read_bytes(), width=int(result["width"]),
                        height=int(result["height"]), view=str(result["view"]),
                        undrawn=tuple(int(i) for i in result.get("undrawn") or ()),
                        out_of_time=tuple(int(i) for i in result.get("out_of_time") or ()),
                        boxed=tuple(int(i) for i in result.get("boxed") or ()),
                        sketched=tuple(int(i) for i in result.get("sketched") or ()),
                        later=tuple(int(i) for i in result.get("later") or ()),
                        simplified=tuple(int(i) for i in result.get("simplified") or ()))


def _learn(recipe: _Recipe, journal: Path) -> bool:
    """Adjust the recipe from the journal of a crashed attempt; False when the journal explains nothing."""
    try:
        lines = journal.read_text(encoding="ascii").splitlines()
    except OSError:
        return False
    if not lines:
        return False
    last = lines[-1].split()
    if last[0] == "start" and len(last) == 3 and last[2].isdigit():
        element_id = int(last[2])
        if last[1] == "manifold" and element_id not in recipe.exact:
            recipe.exact.add(element_id)
        else:
            recipe.skip.add(element_id)
        # Back to the one-pass iterator for the rest: the offender (and its kin) no longer go through it.
        recipe.careful = False
        return True
    if last == ["batch"] and not recipe.careful:
        recipe.careful = True  # the crash was inside the one-pass iterator: go element by element
        return True
    return False


def _content_key(model_path: str) -> str:
    """A digest of the file's content, hashed once per version of the file (its path and signature)."""
    signature = file_signature(model_path)
    with _content_keys_lock:
        known = _content_keys.get((model_path, signature)) if signature is not None else None
    if known is not None:
        return known
    digest = hashlib.blake2b(digest_size=16)
    with open(model_path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    key = digest.hexdigest()
    if signature is not None and signature == file_signature(model_path):  # unchanged while it was read
        with _content_keys_lock:
            _content_keys[(model_path, signature)] = key
            while len(_content_keys) > _REMEMBERED_MODELS:
                _content_keys.popitem(last=False)
    return key


def _remember(key: str, recipe: _Recipe) -> None:
    with _recipes_lock:
        _recipes[key] = recipe
        _recipes.move_to_end(key)
        while len(_recipes) > _REMEMBERED_MODELS:
            _recipes.popitem(last=False)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
