"""The render child process: ``python -m ifc_host.render_child`` reads one JSON request on stdin;
``python -m ifc_host.render_child --serve`` is a render server that answers many, one at a time.

Request: {model_path, view, element_ids, max_px, png_path, result_path}; cache_dir, where meshes of this model
content are kept (render_mesh_cache.py); and, when an earlier attempt of the same render crashed, {careful, exact,
skip, journal_path} (see render_bodies.py); deadline, the time.time() by which tessellation stops; costly_deadline, the
time.time() by which costly bodies are built or drawn as stand-ins (a model's first view); build_threads, of a
server's background builds of costly bodies (render_background.py); content_key, the
parent's digest of the model file (a server keeps an open model only for that content). The PNG goes to png_path
and {ok, width, height, view, undrawn, out_of_time, simplified, boxed, sketched, later} or {ok: false, error} to result_path (not stdout:
IfcOpenShell's native logging may write there). Exit code 0 when rendered, 1 on a reported error. With kind
"scene" the request builds a glTF scene instead (scene_gltf.py); with kind "prepare" it tessellates the
view's elements into the mesh caches, for the views to come (render.prepare), and for a plan draws it and throws
the image away, keeping its sections and footprints (render_geometry.py); it answers {ok, view, undrawn,
out_of_time} (and "meshes", the count, for a 3D view); "threads" is how many the geometry iterator may use.

A server reads one request per line on stdin and, once the result file is written, answers one line on its
original stdout, {"done": request_id, "code": 0|1, "opens": n, "exit": bool}: "opens" counts the models it
opened so far, "exit" says it leaves after this answer (over its memory limit, render_models.py). Its fd 1 is
pointed at stderr first, so native logging never mixes with the answers. It keeps the models it opened
(render_models.py) and leaves at EOF on stdin, or when no request came for ``IDLE_EXIT_S`` seconds
(``NEXUS_RENDER_IDLE_S``, default 300).
"""
from __future__ import annotations

import json
import os
import select
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ifcopenshell

from ifc_host.render_axonometric import draw_axonometric
from ifc_host.render_background import BackgroundBuilds
from ifc_host.render_bodies import BodyOptions, tessellate_bodies
from ifc_host.render_models import OpenModels, resident_mb
from ifc_host.render_plan import draw_plan
from ifc_host.render_scene import Mesh, ViewError, all_elements, elements_of_storey, open_model, resolve_view
from ifc_host.scene_gltf import scene_request

IDLE_EXIT_S = float(os.environ.get("NEXUS_RENDER_IDLE_S") or 300)
PREPARE_PX = 1568  # a prepared plan is drawn (and thrown away) for the plan geometry it leaves behind
Handler = Callable[[dict[str, Any]], dict[str, Any]]


def render_request(request: dict[str, Any], models: OpenModels | None = None) -> dict[str, Any]:
    if request.get("kind") == "scene":  # a glTF scene instead of a PNG (ifc_host/scene_gltf.py)
        return scene_request(request, models)
    started, cpu = time.perf_counter(), time.process_time()
    if models is not None:
        kept = models.get(request["model_path"], request.get("content_key"))
        model, memory, builds = kept.model, kept.meshes, kept.builds
    else:
        model, memory, builds = open_model(request["model_path"]), None, None
    opened_s = time.perf_counter() - started
    try:
        return _render(model, memory, request, models, builds)
    finally:  # on stderr, for a person reading the host's log and for bench/bench_corpus.py
        print(f"render {request.get('kind') or 'view'} {request.get('view')!r}: open {opened_s:.2f} s, "
              f"total {time.perf_counter() - started:.2f} s, cpu {time.process_time() - cpu:.2f} s, "
              f"rss {resident_mb():.0f} MB", file=sys.stderr, flush=True)


def _render(model: ifcopenshell.file, memory: dict[int, Mesh] | None, request: dict[str, Any],
            models: OpenModels | None, builds: BackgroundBuilds | None = None) -> dict[str, Any]:
    element_ids = [int(i) for i in request.get("element_ids") or []]
    spec = resolve_view(model, request.get("view"), element_ids)
    options = _options(request, memory, builds)
    if request.get("kind") == "prepare" and spec.kind == "plan":  # drawn too: its sections and footprints are kept
        drawing = draw_plan(model, spec, [], PREPARE_PX, options)
        return {"ok": True, "view": spec.name, "undrawn": sorted(drawing.undrawn),
                "out_of_time": sorted(drawing.out_of_time), "later": sorted(drawing.later)}
    if request.get("kind") == "prepare":  # tessellate the view's elements for the views to come, draw nothing
        elements = elements_of_storey(spec.storey) if spec.storey is not None else [
            e for e in all_elements(model) if not e.is_a("IfcSpace")]
        bodies = tessellate_bodies(model, elements, options)
        return {"ok": True, "view": spec.name, "meshes": len(bodies.meshes), "undrawn": sorted(bodies.undrawn),
                "out_of_time": sorted(bodies.out_of_time), "later": sorted(bodies.later)}
    if spec.kind == "plan":
        drawing = draw_plan(model, spec, element_ids, int(request["max_px"]), options)
    else:  # reference models (a federated session's) greyed behind the working model
        references = [models.get(path).model if models is not None else open_model(path)
                      for path in request.get("ref_paths") or []]
        drawing = draw_axonometric(model, spec, element_ids, int(request["max_px"]), options, references)
    Path(request["png_path"]).write_bytes(drawing.png)
    return {"ok": True, "width": drawing.width, "height": drawing.height, "view": spec.name,
            "undrawn": sorted(drawing.undrawn), "out_of_time": sorted(drawing.out_of_time),
            "boxed": sorted(drawing.boxed), "sketched": sorted(drawing.sketched), "later": sorted(drawing.later),
            "simplified": sorted(drawing.simplified)}


def _options(request: dict[str, Any], memory: dict[int, Mesh] | None,
             builds: BackgroundBuilds | None = None) -> BodyOptions:
    return BodyOptions(careful=bool(request.get("careful")),
                       exact=frozenset(int(i) for i in request.get("exact") or ()),
                       skip=frozenset(int(i) for i in request.get("skip") or ()),
                       journal_path=request.get("journal_path"), cache_dir=request.get("cache_dir"),
                       deadline=float(request["deadline"]) if request.get("deadline") else None, memory=memory,
                       costly_deadline=float(request["costly_deadline"]) if request.get("costly_deadline") else None,
                       stand_in_deadline=float(request["stand_in_deadline"]) if request.get("stand_in_deadline")
                       else None,
                       threads=max(1, int(request.get("threads") or 1)), background=builds,
                       build_threads=max(1, int(request.get("build_threads") or 1)))


def answer(request: dict[str, Any], handle: Handler) -> int:
    """Run one request and write its result file; the exit code (0 rendered, 1 a reported error)."""
    try:
        result, code = handle(request), 0
    except ViewError as exc:
        result, code = {"ok": False, "error": str(exc)}, 1
    except Exception as exc:  # any failure becomes a reported error, not a crash
        traceback.print_exc()
        result, code = {"ok": False, "error": f"rendering failed: {type(exc).__name__}: {exc}"}, 1
    Path(request["result_path"]).write_text(json.dumps(result), encoding="utf-8")
    return code


def main() -> int:
    return answer(json.loads(sys.stdin.buffer.read()), render_request)


def serve(handle: Handler | None = None, idle_exit_s: float = IDLE_EXIT_S) -> int:
    """Answer requests until stdin ends or stays quiet for ``idle_exit_s``; ``handle`` replaces the renderer
    (tests wrap it to crash on purpose)."""
    _leave_with_parent(os.getppid())
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    models = OpenModels()
    handler = handle or (lambda request: render_request(request, models))
    for line in _lines(sys.stdin.fileno(), idle_exit_s):
        request = json.loads(line)
        code = answer(request, handler)
        leave = not models.shrink(request.get("model_path"))
        answers.write(json.dumps({"done": request.get("request_id"), "code": code, "opens": models.opens,
                                  "exit": leave}) + "\n")
        if leave:
            break
    return 0


def _leave_with_parent(parent: int) -> None:
    """A server whose parent died in the middle of a render stops at once rather than finish it for nobody."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="render-server-parent").start()


def _lines(fd: int, idle_exit_s: float) -> Iterator[bytes]:
    pending = b""
    while True:
        ready, _, _ = select.select([fd], [], [], idle_exit_s)
        if not ready:
            return
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if line.strip():
                yield line


if __name__ == "__main__":
    sys.exit(serve() if "--serve" in sys.argv[1:] else main())
