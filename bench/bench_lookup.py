"""Lookup latency of the API indexes (issue 8): p50/p99 over 1,000 queries, and index build time.

Run by hand: python bench/bench_lookup.py
"""
from __future__ import annotations

import random
import statistics
import time

from cloud.grounding.ifc_api import build_ifc_index

QUERIES = ["create_entity", "root.create_entity", "IfcDoor", "IfcWall.PredefinedType", "assign container",
           "get_psets", "edit_pset", "placement", "IfcBuildingStorey", "shape_builder", "add_wall_representation",
           "remove_product", "filter_elements", "IfcSpace LongName", "unit scale", "opening filling", "get_type",
           "IfcRelVoidsElement", "edit_object_placement", "material layer set", "zz-no-such-thing"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(label: str, build) -> None:
    started = time.perf_counter()
    index = build()
    built = time.perf_counter() - started
    rng = random.Random(0)
    timings = []
    for _ in range(1000):
        query = rng.choice(QUERIES)
        t0 = time.perf_counter()
        index.answer(query)
        timings.append((time.perf_counter() - t0) * 1000)
    print(f"{label}: {len(index):,} entries, built in {built:.2f} s; lookup over 1,000 queries: "
          f"p50 {statistics.median(timings):.2f} ms, p99 {percentile(timings, 0.99):.2f} ms, max {max(timings):.2f} ms")


if __name__ == "__main__":
    measure("IFC4 index (ifcopenshell api + util + schema)", lambda: build_ifc_index("IFC4"))
    try:
        from cloud.grounding.revit_api import build_revit_index
        measure("Revit 2026 index (pyrevit-stubs-26)", lambda: build_revit_index(26))
    except LookupError as exc:
        print(f"Revit index skipped: {exc}")
