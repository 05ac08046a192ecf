"""The 3D scene of a view or of a change as a GLB, built in the render child (see scene_gltf.py for what it holds).

The same isolation as a PNG render (render.py): a render server (render_pool.py), which keeps the models it
opened with their meshes (the PNG of the same view and the scene read one open model; scene_gltf.ModelFacts
keeps what a scene read of it), a native crash on one element costing that element (journal, then
OpenCascade, then left out), the recipe and the meshes remembered per model content, a hard timeout. The model as it was before a change (``before_path``) gets its own mesh folder, and each reference model of a federated session
(``refs``: name and path) its own mesh folder, journal and recipe (a crash on a reference's element is learnt
for that reference).
"""
from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ifc_host import render
from ifc_host.render import RenderError

CHANGE_KINDS = ("added", "modified", "deleted")
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_TIME_BUDGET_S = 45.0
MIN_BYTES, MAX_BYTES = 64 * 1024, 48 * 1024 * 1024  # the host websocket carries at most 64 MB (base64)

__all__ = ["RenderError", "SceneFile", "build_scene_file"]


@dataclass(frozen=True)
class SceneFile:
    glb: bytes
    view: str
    nodes: int
    counts: dict[str, int]
    undrawn: int
    omitted_for_size: int
    omitted_for_time: int
    references: dict[str, int]  # nodes per reference model (its name), context only: never a change


def build_scene_file(model_path: str, view: str | None, element_ids: list[int],
                     changes: dict[str, list[int]] | None = None, before_path: str | None = None,
                     global_ids: list[str] | None = None, max_bytes: int = DEFAULT_MAX_BYTES, time_budget_s: float = DEFAULT_TIME_BUDGET_S,
                     timeout_s: float = 90, refs: Sequence[tuple[str, str]] = ()) -> SceneFile:
    if not MIN_BYTES <= int(max_bytes) <= MAX_BYTES:
        raise RenderError(f"max_bytes must be between {MIN_BYTES} and {MAX_BYTES}, got {max_bytes}")
    for path in (model_path, before_path, *(path for _, path in refs)):
        if path is not None and not Path(path).is_file():
            raise RenderError(f"no model file at {path}")
    key = render._content_key(model_path)
    before_key = render._content_key(before_path) if before_path else None
    recipe = _recipe_of(key)
    ref_keys = [render._content_key(path) for _, path in refs]
    ref_recipes = [_recipe_of(ref_key) for ref_key in ref_keys]
    what = f"the scene of {view!r}" if view else "the scene"
    deadline = time.monotonic() + timeout_s
    with tempfile.TemporaryDirectory(prefix="nexus-scene-") as folder:
        work = Path(folder)
        for attempt in range(render.MAX_RECOVERIES + 1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            journal = work / f"journal-{attempt}.txt"
            request: dict[str, Any] = {
                "kind": "scene", "model_path": str(Path(model_path).resolve()), "view": view,
                "element_ids": [int(i) for i in element_ids], "global_ids": list(global_ids or ()),
                "changes": {k: [int(i) for i in (changes or {}).get(k) or ()] for k in CHANGE_KINDS},
                "before_path": str(Path(before_path).resolve()) if before_path else None,
                "max_bytes": int(max_bytes), "time_budget_s": min(float(time_budget_s), remaining * 0.8),
                "glb_path": str(work / "scene.glb"), "result_path": str(work / "result.json"),
                "careful": recipe.careful, "exact": sorted(recipe.exact), "skip": sorted(recipe.skip),
                "journal_path": str(journal), "cache_dir": str(render._mesh_folders.folder(key)), "content_key": key,
                "before_cache_dir": str(render._mesh_folders.folder(before_key)) if before_key else None,
                "refs": [{"name": name, "path": str(Path(path).resolve()), "content_key": ref_key,
                          "cache_dir": str(render._mesh_folders.folder(ref_key)),
                          "journal_path": str(work / f"journal-{attempt}-ref-{number}.txt"),
                          "careful": ref_recipe.careful, "exact": sorted(ref_recipe.exact),
                          "skip": sorted(ref_recipe.skip)}
                         for number, ((name, path), ref_key, ref_recipe)
                         in enumerate(zip(refs, ref_keys, ref_recipes, strict=True))]}
            crash = render._attempt(request, what, remaining, timeout_s)
            if crash is None:
                for known_key, known_recipe in [(key, recipe), *zip(ref_keys, ref_recipes, strict=True)]:
                    if known_recipe.careful or known_recipe.exact or known_recipe.skip:
                        render._remember(known_key, known_recipe)
                return _read(work)
            # The crash is learnt for the model whose journal names the element it died on.
            learnt = render._learn(recipe, journal) or any(
                render._learn(ref_recipe, Path(ref["journal_path"]))
                for ref, ref_recipe in zip(request["refs"], ref_recipes, strict=True))
            if not learnt:
                raise RenderError(crash)
        else:
            raise RenderError(f"the renderer crashed {render.MAX_RECOVERIES + 1} times while building {what}; gave up")
    raise RenderError(f"building {what} timed out after {timeout_s:g} s (the renderer was stopped)")


def _recipe_of(key: str) -> render._Recipe:
    with render._recipes_lock:
        known = render._recipes.get(key)
        return render._Recipe(known.careful, set(known.exact), set(known.skip)) if known else render._Recipe()


def _read(work: Path) -> SceneFile:
    try:
        result = json.loads((work / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise RenderError("the renderer left an unreadable result") from None
    if not result.get("ok"):
        raise RenderError(str(result.get("error") or "building the scene failed"))
    return SceneFile(glb=(work / "scene.glb").read_bytes(), view=str(result["view"]), nodes=int(result["nodes"]),
                     counts={k: int(v) for k, v in result["counts"].items()}, undrawn=len(result["undrawn"]),
                     omitted_for_size=int(result["omitted_for_size"]),
                     omitted_for_time=int(result["omitted_for_time"]),
                     references={str(k): int(v) for k, v in (result.get("references") or {}).items()})
