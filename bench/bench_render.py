"""Benchmark: sample-building generation and view rendering (plan of a ~1,000-element storey: target <= 2.5 s).

    python bench/bench_render.py [--runs 3] [--max-px 1568] [--keep DIR]

Prints one line per measurement. Renders go through the real child process (render_view), so the
figures include interpreter start-up and imports; "in-process" lines show the renderer's own work.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ifcopenshell  # noqa: E402

from ifc_host.render import render_view, render_view_from_bytes  # noqa: E402
from ifc_host.render_child import render_request  # noqa: E402
from ifc_host.render_scene import elements_of_storey, storeys_by_elevation  # noqa: E402
from ifc_host.sample import write_sample_model  # noqa: E402

PLAN_TARGET_S = 2.5


def timed(label: str, runs: int, action: Callable[[], object]) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    median = statistics.median(samples)
    print(f"{label:<62} median {median:6.2f} s  (min {min(samples):.2f}, max {max(samples):.2f}, n={runs})")
    return median


def generate(folder: Path, name: str, storeys: int, scale: int) -> Path:
    path = folder / name
    started = time.perf_counter()
    summary = write_sample_model(path, storeys=storeys, scale=scale)
    print(f"sample storeys={storeys:<2} scale={scale:<2} -> {summary['entities']:>7,} entities, "
          f"{summary['bytes'] / 1e6:5.1f} MB, {summary['doors']:>5} doors   in {time.perf_counter() - started:5.2f} s")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-px", type=int, default=1568)
    parser.add_argument("--keep", type=Path, help="write the models and images here instead of a temp dir")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        print("== generation")
        small = generate(folder, "small.ifc", storeys=3, scale=1)
        wide = generate(folder, "wide.ifc", storeys=2, scale=25)
        generate(folder, "big.ifc", storeys=10, scale=8)

        model = ifcopenshell.open(str(wide))
        level_1 = storeys_by_elevation(model)[0]
        elements = elements_of_storey(level_1)
        doors = [e.id() for e in elements if e.is_a("IfcDoor")][:50]
        print(f"== plan of a {len(elements):,}-element storey ({level_1.Name} of wide.ifc), {args.max_px} px")
        plan = timed("render_view plan, nothing highlighted", args.runs,
                     lambda: render_view(str(wide), level_1.Name, [], args.max_px))
        timed("render_view plan, 50 doors highlighted", args.runs,
              lambda: render_view(str(wide), level_1.Name, doors, args.max_px))
        text = model.to_string()
        timed("render_view_from_bytes plan (model held as a string)", args.runs,
              lambda: render_view_from_bytes(text, level_1.Name, doors, args.max_px))
        request = {"model_path": str(wide), "view": level_1.Name, "element_ids": doors, "max_px": args.max_px,
                   "png_path": str(folder / "plan.png"), "result_path": str(folder / "plan.json")}
        timed("in-process plan (no child process start-up)", args.runs, lambda: render_request(request))
        print(f"   target <= {PLAN_TARGET_S} s: {'met' if plan <= PLAN_TARGET_S else 'MISSED'}")

        print("== other views")
        timed("plan of a 3-storey sample storey (small.ifc)", args.runs,
              lambda: render_view(str(small), "Level 1", [], args.max_px))
        timed("axonometric '3D' of small.ifc", args.runs, lambda: render_view(str(small), "3D", [], args.max_px))
        timed(f"axonometric '3D: {level_1.Name}' of wide.ifc", 1,
              lambda: render_view(str(wide), f"3D: {level_1.Name}", doors, args.max_px))
        timed("axonometric '3D' of big.ifc (whole 10-storey building)", 1,
              lambda: render_view(str(folder / "big.ifc"), "3D", [], args.max_px, timeout_s=600))
    return 0


if __name__ == "__main__":
    sys.exit(main())
