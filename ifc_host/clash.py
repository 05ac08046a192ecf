"""Clash detection with IfcOpenShell's ifcclash: a working model against reference models, or within one model.

Hard clashes are ifcclash's "intersection" mode: two bodies that penetrate each other deeper than `tolerance`
(metres; touching faces and overlaps within the tolerance are not clashes). With `clearance` (metres) the check is
ifcclash's "clearance" mode instead: elements closer than that to each other, touching or not. Each result becomes a
finding with both elements, the point where they meet (midway between ifcclash's two contact points) and the
distance (the penetration depth of a hard clash, the gap of a clearance clash). Every IfcElement with a body takes
part, openings and other feature elements excepted (ifcclash's own selection).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import ifcopenshell

from ifc_host.findings import ElementRef, Finding

DEFAULT_TOLERANCE = 0.002  # 2 mm: coincident faces of adjacent elements are not clashes

Progress = Callable[[str], None]


class ClashProblem(ValueError):
    """A clash check that cannot run as asked (a bad number, a model that cannot be read)."""


def clash_findings(work: str | Path, refs: Sequence[str | Path] = (), *, clearance: float | None = None,
                   tolerance: float = DEFAULT_TOLERANCE, models: dict[str, ifcopenshell.file] | None = None,
                   progress: Progress | None = None, only: Collection[str] | None = None) -> list[Finding]:
    """Clashes between `work` and each of `refs` (or within `work` when there are none), as findings.

    `models` may hold files already open, keyed by the path given, so they are not read twice. `only` (GlobalIds
    of `work`, with `refs`): only those elements of the working model take part (after an automation: the ones it
    changed), so the rest of it is never meshed."""
    from ifcclash.ifcclash import Clasher, ClashSettings

    if tolerance < 0:
        raise ClashProblem(f"the tolerance must be 0 or more metres, got {tolerance}")
    if clearance is not None and clearance <= 0:
        raise ClashProblem(f"the clearance must be more than 0 metres, got {clearance}")
    settings = ClashSettings()
    settings.logger = _progress_logger(progress)
    clasher = Clasher(settings)
    opened: dict[str, ifcopenshell.file] = {}
    for path in [work, *refs]:
        key = str(path)
        opened[key] = (models or {}).get(key) or ifcopenshell.open(key)
        clasher.ifcs[key] = opened[key]
    side: dict[str, Any] = {"file": str(work)}
    if only is not None and refs:
        present = sorted(g for g in only if _has_guid(opened[str(work)], g))
        if not present:
            return []
        side.update(mode="i", selector=", ".join(present))  # ifcopenshell's selector: a list of GlobalIds
    clash_set: dict[str, Any] = {"name": "clash", "a": [side], "check_all": True}
    if refs:
        clash_set["b"] = [{"file": str(r)} for r in refs]
    if clearance is None:
        clash_set.update(mode="intersection", tolerance=tolerance)
    else:
        clash_set.update(mode="clearance", clearance=clearance)
    clasher.clash_sets = [clash_set]
    clasher.clash()
    side_a = [str(work)]
    side_b = [str(r) for r in refs] or side_a
    findings: list[Finding] = []
    seen: set[frozenset[str]] = set()
    known: dict[tuple[str, str], ElementRef] = {}  # an element is in many results: look it up once per side
    for result in clash_set.get("clashes", {}).values():
        pair = frozenset((result["a_global_id"], result["b_global_id"]))
        if pair in seen or len(pair) < 2:
            continue  # within one model ifcclash reports each pair both ways
        seen.add(pair)
        a, b = (_known(known, side, result[f"{side}_global_id"], paths, opened)
                for side, paths in (("a", side_a), ("b", side_b)))
        findings.append(_finding(a, b, result, clearance))
    findings.sort(key=lambda f: (f.elements[0].model, f.elements[0].global_id, f.elements[1].global_id))
    return findings


def _has_guid(model: ifcopenshell.file, global_id: str) -> bool:
    try:
        return model.by_guid(global_id).is_a("IfcElement")
    except RuntimeError:
        return False


def _known(known: dict[tuple[str, str], ElementRef], side: str, global_id: str, paths: list[str],
           opened: dict[str, ifcopenshell.file]) -> ElementRef:
    found = known.get((side, global_id))
    if found is None:
        found = known[(side, global_id)] = _element(global_id, paths, opened)
    return found


def _element(global_id: str, paths: list[str], opened: dict[str, ifcopenshell.file]) -> ElementRef:
    for path in paths:
        try:
            return ElementRef.of(opened[path].by_guid(global_id), Path(path).name)
        except RuntimeError:
            continue
    return ElementRef(global_id, "", None, Path(paths[0]).name)


def _finding(a: ElementRef, b: ElementRef, result: dict[str, Any], clearance: float | None) -> Finding:
    p1, p2 = result["p1"], result["p2"]
    point = (round((p1[0] + p2[0]) / 2, 4), round((p1[1] + p2[1]) / 2, 4), round((p1[2] + p2[2]) / 2, 4))
    distance = round(float(result["distance"]), 4)
    where = f"at ({point[0]:.2f}, {point[1]:.2f}, {point[2]:.2f})"
    if clearance is None:
        return Finding("clash", "error", f"{a.label()} clashes with {b.label()}",
                       f"{a.label()} ({a.model}, {a.global_id}) and {b.label()} ({b.model}, {b.global_id}) "
                       f"intersect {where}, {distance * 1000:.0f} mm deep.", (a, b), point, distance)
    return Finding("clearance", "warning", f"{a.label()} is within {clearance:g} m of {b.label()}",
                   f"{a.label()} ({a.model}, {a.global_id}) and {b.label()} ({b.model}, {b.global_id}) are "
                   f"{distance * 1000:.0f} mm apart {where}, less than the clearance of {clearance * 1000:.0f} mm.",
                   (a, b), point, distance)


def _progress_logger(progress: Progress | None) -> logging.Logger:
    logger = logging.getLogger("nexus.clash")
    logger.propagate = False
    logger.handlers.clear()
    logger.setLevel(logging.INFO)
    if progress is not None:
        handler = logging.Handler()
        handler.emit = lambda record: progress(record.getMessage())  # type: ignore[method-assign]
        logger.addHandler(handler)
    return logger
