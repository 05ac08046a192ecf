"""Benchmark of before → after and validation after an automation (issue 12, items 4 and 5). Run by hand.

For each sample model: a 1,000-element change (half the elements moved, half renamed, one pset value each
on a hundred of them) and a 10,000-element change (renamed), measured in-process with the change recorder
installed exactly as a script child installs it:

    recorder overhead   the script's time with the recorder (which now snapshots the old values of every
                        entity it sees touched) against the same script without it
    finish              exact added/modified/deleted sets
    before → after      change_details: every modified element classified, values for the first ones
    validation          schema and model-rule findings the change introduced (only those)

    python bench/bench_changes.py             # ~4k-entity and ~345k-entity samples (built once, cached)
    python bench/bench_changes.py --quick     # the small sample only

Target (issue 12): validation of a 1,000-element change <= 2 s; before → after stays cheap on 10k elements.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ifcopenshell  # noqa: E402
import ifcopenshell.api.geometry  # noqa: E402
import ifcopenshell.api.pset  # noqa: E402
import ifcopenshell.util.placement  # noqa: E402
import ifcopenshell.util.unit  # noqa: E402

from ifc_host.change_details import describe_changes  # noqa: E402
from ifc_host.changes import ChangeRecorder  # noqa: E402
from ifc_host.model_file import open_checked  # noqa: E402
from ifc_host.sample import write_sample_model  # noqa: E402
from ifc_host.validation import introduced_findings  # noqa: E402

SAMPLES = {"small": (3, 1), "largest": (10, 40)}


def sample(cache: Path, name: str) -> Path:
    storeys, scale = SAMPLES[name]
    path = cache / f"sample-{storeys}x{scale}.ifc"
    if not path.exists():
        started = time.perf_counter()
        info = write_sample_model(path, storeys=storeys, scale=scale)
        print(f"  built {path.name}: {info['entities']:,} entities in {time.perf_counter() - started:.1f} s")
    return path


def change_1000(model: ifcopenshell.file) -> None:
    elements = sorted(model.by_type("IfcBuildingElement"), key=lambda e: e.id())[:1000]
    scale = ifcopenshell.util.unit.calculate_unit_scale(model)
    for index, element in enumerate(elements):
        if index % 2 == 0 and element.ObjectPlacement is not None:
            matrix = ifcopenshell.util.placement.get_local_placement(element.ObjectPlacement)
            matrix[0][3] += 0.1 / scale
            ifcopenshell.api.geometry.edit_object_placement(model, product=element, matrix=matrix, is_si=False)
        else:
            element.Name = f"bench {index}"
        if index % 10 == 0:
            pset = ifcopenshell.api.pset.add_pset(model, product=element, name="Pset_Bench")
            ifcopenshell.api.pset.edit_pset(model, pset=pset, properties={"Checked": True})


def change_10k(model: ifcopenshell.file) -> None:
    for index, element in enumerate(sorted(model.by_type("IfcProduct"), key=lambda e: e.id())[:10_000]):
        element.Name = f"renamed {index}"


def measure(path: Path, script: Callable[[ifcopenshell.file], None]) -> dict[str, float]:
    script(open_checked(path))  # warm-up: the first run of a script pays IfcOpenShell's one-time costs
    bare = open_checked(path)
    started = time.perf_counter()
    script(bare)
    without = time.perf_counter() - started
    del bare
    model = open_checked(path)
    recorder = ChangeRecorder(model)
    model.transaction = recorder
    started = time.perf_counter()
    script(model)
    with_recorder = time.perf_counter() - started
    model.transaction = None
    started = time.perf_counter()
    changes = recorder.finish()
    finish = time.perf_counter() - started
    started = time.perf_counter()
    details = describe_changes(model, changes)
    before_after = time.perf_counter() - started
    started = time.perf_counter()
    findings, checked = introduced_findings(model, changes)
    validation = time.perf_counter() - started
    return {"entities": len(model.entity_names()), "modified": len(changes.modified), "without": without,
            "with": with_recorder, "snapshots": len(changes.before), "finish": finish,
            "before_after": before_after, "groups": len(details["groups"]), "shown": len(details["elements"]),
            "validation": validation, "checked": checked, "findings": len(findings)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the small sample only")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "nexus-bench-samples")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    names = ["small"] if args.quick else list(SAMPLES)
    header = (f"{'sample':>8} {'change':>7} {'entities':>9} {'modified':>8} {'script s':>9} {'+recorder s':>11} "
              f"{'snapshots':>9} {'finish s':>8} {'before->after s':>15} {'groups':>6} {'validation s':>12} "
              f"{'checked':>8} {'findings':>8}")
    print(header)
    for name in names:
        path = sample(args.cache, name)
        for label, script in (("1,000", change_1000), ("10,000", change_10k)):
            r = measure(path, script)
            print(f"{name:>8} {label:>7} {r['entities']:>9,} {r['modified']:>8,} {r['without']:>9.2f} "
                  f"{r['with']:>11.2f} {r['snapshots']:>9,} {r['finish']:>8.2f} {r['before_after']:>15.2f} "
                  f"{r['groups']:>6} {r['validation']:>12.2f} {r['checked']:>8,} {r['findings']:>8}")


if __name__ == "__main__":
    main()
