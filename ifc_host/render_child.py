"""The render child process: ``python -m ifc_host.render_child`` reads one JSON request on stdin.

Request: {model_path, view, element_ids, max_px, png_path, result_path}; cache_dir, where meshes of this model
content are kept (render_mesh_cache.py); and, when an earlier attempt of the same render crashed, {careful, exact,
skip, journal_path} (see render_bodies.py); deadline, the time.time() by which tessellation stops. The PNG goes to png_path and {ok, width, height, view, undrawn} or
{ok: false, error} to result_path (not stdout: IfcOpenShell's native logging may write there). Exit code 0 when
rendered, 1 on a reported error. With kind "scene" the request builds a glTF scene instead (scene_gltf.py).
"""
from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Any

from ifc_host.render_axonometric import draw_axonometric
from ifc_host.render_bodies import BodyOptions
from ifc_host.render_plan import draw_plan
from ifc_host.render_scene import ViewError, open_model, resolve_view
from ifc_host.scene_gltf import scene_request


def render_request(request: dict[str, Any]) -> dict[str, Any]:
    if request.get("kind") == "scene":  # a glTF scene instead of a PNG (ifc_host/scene_gltf.py)
        return scene_request(request)
    model = open_model(request["model_path"])
    element_ids = [int(i) for i in request.get("element_ids") or []]
    spec = resolve_view(model, request.get("view"), element_ids)
    options = BodyOptions(careful=bool(request.get("careful")),
                          exact=frozenset(int(i) for i in request.get("exact") or ()),
                          skip=frozenset(int(i) for i in request.get("skip") or ()),
                          journal_path=request.get("journal_path"), cache_dir=request.get("cache_dir"),
                          deadline=float(request["deadline"]) if request.get("deadline") else None)
    if spec.kind == "plan":
        drawing = draw_plan(model, spec, element_ids, int(request["max_px"]), options)
    else:  # reference models (a federated session's) greyed behind the working model
        references = [open_model(path) for path in request.get("ref_paths") or []]
        drawing = draw_axonometric(model, spec, element_ids, int(request["max_px"]), options, references)
    Path(request["png_path"]).write_bytes(drawing.png)
    return {"ok": True, "width": drawing.width, "height": drawing.height, "view": spec.name,
            "undrawn": sorted(drawing.undrawn), "out_of_time": sorted(drawing.out_of_time)}


def main() -> int:
    request = json.loads(sys.stdin.buffer.read())
    try:
        result, code = render_request(request), 0
    except ViewError as exc:
        result, code = {"ok": False, "error": str(exc)}, 1
    except Exception as exc:  # any failure becomes a reported error, not a crash
        traceback.print_exc()
        result, code = {"ok": False, "error": f"rendering failed: {type(exc).__name__}: {exc}"}, 1
    Path(request["result_path"]).write_text(json.dumps(result), encoding="utf-8")
    return code


if __name__ == "__main__":
    sys.exit(main())
