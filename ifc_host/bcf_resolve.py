"""BCF topics resolved to elements of a model: by their viewpoints' components (IFC GlobalIds), or, for a topic
without components, by its camera and clipping planes: the elements the camera looks at (whose bounding boxes its
line of sight crosses, nearest first), among those on the visible side of every clipping plane (a BCF clipping
plane's direction points into the half-space that is cut away).

Runs wherever the model is: in-process on a file (`nexus run --bcf-in`), or on a host as a read-only collection
(the server's BCF upload sends this module's source with a call to `print_resolved`).
"""
from __future__ import annotations

import json
import math
from typing import Any

MAX_COMPONENTS = 200  # per topic: a viewpoint selecting thousands of elements names no issue in particular
LOOKED_AT = 3  # elements a camera-only topic resolves to
MARGIN = 0.3  # metres around a box the line of sight may pass and still look at it
CONE_DEGREES = 12.0  # without a box on the line of sight: the nearest elements within this angle of it


def resolve_topics(model: Any, topics: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{topic guid: {"how": "components" | "viewpoint" | "none", "elements": [...], "missing": [GlobalId...]}}."""
    out: dict[str, dict[str, Any]] = {}
    boxes: list[tuple[Any, tuple[float, ...], tuple[float, ...]]] | None = None
    for topic in topics:
        found, missing = [], []
        for guid in list(dict.fromkeys(topic.get("components") or []))[:MAX_COMPONENTS]:
            try:
                found.append(_element(model.by_guid(guid)))
            except RuntimeError:
                missing.append(guid)
        if found:
            out[topic["guid"]] = {"how": "components", "elements": found, "missing": missing}
            continue
        camera = topic.get("camera")
        if camera:
            if boxes is None:
                boxes = _boxes(model)
            seen = _looked_at(boxes, camera, topic.get("clipping") or [])
            if seen:
                out[topic["guid"]] = {"how": "viewpoint", "elements": [_element(e) for e in seen], "missing": missing}
                continue
        out[topic["guid"]] = {"how": "none", "elements": [], "missing": missing}
    return out


def print_resolved(model: Any, topics_json: str) -> None:
    print(json.dumps(resolve_topics(model, json.loads(topics_json))))


def _element(entity: Any) -> dict[str, Any]:
    return {"global_id": getattr(entity, "GlobalId", "") or "", "ifc_class": entity.is_a(),
            "name": getattr(entity, "Name", None), "step_id": entity.id()}


def _boxes(model: Any) -> list[tuple[Any, tuple[float, ...], tuple[float, ...]]]:
    import multiprocessing

    import ifcopenshell.geom

    settings = ifcopenshell.geom.settings()
    settings.set("use-world-coords", True)
    elements = [e for e in model.by_type("IfcElement") if not e.is_a("IfcFeatureElement") and e.Representation]
    if not elements:
        return []
    out = []
    iterator = ifcopenshell.geom.iterator(settings, model, max(1, min(2, multiprocessing.cpu_count())),
                                          include=elements)
    if not iterator.initialize():
        return []
    while True:
        shape = iterator.get()
        verts = shape.geometry.verts
        if verts:
            xs, ys, zs = verts[0::3], verts[1::3], verts[2::3]
            out.append((model.by_id(shape.id), (min(xs), min(ys), min(zs)), (max(xs), max(ys), max(zs))))
        if not iterator.next():
            break
    return out


def _looked_at(boxes: list[tuple[Any, tuple[float, ...], tuple[float, ...]]], camera: dict[str, Any],
               clipping: list[dict[str, Any]]) -> list[Any]:
    origin = [float(v) for v in camera["position"]]
    direction = _unit([float(v) for v in camera["direction"]])
    if direction is None:
        return []
    visible = [b for b in boxes if _kept(b, clipping)]
    hits = []
    for entity, low, high in visible:
        t = _ray_box(origin, direction, [v - MARGIN for v in low], [v + MARGIN for v in high])
        if t is not None:
            hits.append((t, entity.id(), entity))
    if hits:
        return [e for _t, _i, e in sorted(hits)[:LOOKED_AT]]
    near = []
    for entity, low, high in visible:
        centre = [(a + b) / 2 for a, b in zip(low, high, strict=True)]
        to = [c - o for c, o in zip(centre, origin, strict=True)]
        distance = math.sqrt(sum(v * v for v in to))
        if distance == 0:
            continue
        angle = math.degrees(math.acos(max(-1.0, min(1.0, sum(a * b for a, b in zip(to, direction, strict=True))
                                                     / distance))))
        if angle <= CONE_DEGREES:
            near.append((angle, distance, entity.id(), entity))
    return [e for *_k, e in sorted(near)[:LOOKED_AT]]


def _kept(box: tuple[Any, tuple[float, ...], tuple[float, ...]], clipping: list[dict[str, Any]]) -> bool:
    centre = [(a + b) / 2 for a, b in zip(box[1], box[2], strict=True)]
    for plane in clipping:
        location, normal = plane["location"], plane["direction"]
        if sum((c - float(p)) * float(n) for c, p, n in zip(centre, location, normal, strict=True)) > 0:
            return False
    return True


def _unit(v: list[float]) -> list[float] | None:
    length = math.sqrt(sum(c * c for c in v))
    return [c / length for c in v] if length > 0 else None


def _ray_box(origin: list[float], direction: list[float], low: list[float], high: list[float]) -> float | None:
    """Distance along the ray to the box (slab test), or None when the ray misses it or it is behind."""
    near, far = -math.inf, math.inf
    for o, d, lo, hi in zip(origin, direction, low, high, strict=True):
        if abs(d) < 1e-12:
            if o < lo or o > hi:
                return None
            continue
        t1, t2 = (lo - o) / d, (hi - o) / d
        near, far = max(near, min(t1, t2)), min(far, max(t1, t2))
    if near > far or far < 0:
        return None
    return max(near, 0.0)
