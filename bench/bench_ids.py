"""Benchmark of the IDS check after an automation (issue 12, item 5). Run by hand.

The IDS check validates the whole model before the script runs and again after it (ifctester validates a model,
not a set of entities; the state before is gone once the script has run), so its cost grows with the elements the
IDS applies to, not with the size of the change. Measured in-process on the sample models:

    parse         ifctester import + XML schema + parsing the IDS (paid once per keeper: forked scripts inherit it)
    check         one full check of the model (four specifications) (paid twice per automation: before and after)
    introduced    comparing the two states

    python bench/bench_ids.py             # ~4k-entity and ~345k-entity samples (built once, cached)
    python bench/bench_ids.py --quick     # the small sample only
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_changes import sample  # noqa: E402
from ifc_host.ids_check import check_model, introduced  # noqa: E402
from ifc_host.ids_reader import parse_ids  # noqa: E402
from ifc_host.model_file import open_checked  # noqa: E402

IDS = """<?xml version="1.0" encoding="UTF-8"?>
<ids xmlns="http://standards.buildingsmart.org/IDS" xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <info><title>bench</title></info>
  <specifications>
    <specification name="Door fire rating" ifcVersion="IFC2X3 IFC4 IFC4X3_ADD2">
      <applicability minOccurs="0" maxOccurs="unbounded">
        <entity><name><simpleValue>IFCDOOR</simpleValue></name></entity></applicability>
      <requirements><property dataType="IFCLABEL"><propertySet><simpleValue>Pset_DoorCommon</simpleValue>
        </propertySet><baseName><simpleValue>FireRating</simpleValue></baseName></property></requirements>
    </specification>
    <specification name="Walls say if external" ifcVersion="IFC2X3 IFC4 IFC4X3_ADD2">
      <applicability minOccurs="0" maxOccurs="unbounded">
        <entity><name><simpleValue>IFCWALL</simpleValue></name></entity></applicability>
      <requirements><property dataType="IFCBOOLEAN"><propertySet><simpleValue>Pset_WallCommon</simpleValue>
        </propertySet><baseName><simpleValue>IsExternal</simpleValue></baseName></property></requirements>
    </specification>
    <specification name="Doors are named" ifcVersion="IFC2X3 IFC4 IFC4X3_ADD2">
      <applicability minOccurs="0" maxOccurs="unbounded">
        <entity><name><simpleValue>IFCDOOR</simpleValue></name></entity></applicability>
      <requirements><attribute><name><simpleValue>Name</simpleValue></name></attribute></requirements>
    </specification>
    <specification name="Spaces are named" ifcVersion="IFC2X3 IFC4 IFC4X3_ADD2">
      <applicability minOccurs="0" maxOccurs="unbounded">
        <entity><name><simpleValue>IFCSPACE</simpleValue></name></entity></applicability>
      <requirements><attribute><name><simpleValue>Name</simpleValue></name></attribute></requirements>
    </specification>
  </specifications>
</ids>
"""


def timed(run):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    value = run()
    return value, (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "nexus-bench-samples")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    ids, parse_ms = timed(lambda: parse_ids(IDS))
    print(f"parse (cold: import, schema, document): {parse_ms:.0f} ms")
    for name in ("small",) if args.quick else ("small", "largest"):
        model = open_checked(sample(args.cache, name))
        applicable = sum(len(model.by_type(c)) for c in ("IfcDoor", "IfcWall", "IfcSpace"))
        before, before_ms = timed(lambda: check_model(model, ids))  # noqa: B023
        doors = sorted(model.by_type("IfcDoor"), key=lambda e: e.id())[:1000]
        for door in doors:
            door.Name = None
            door.Tag = (door.Tag or "") + "*"
        after, after_ms = timed(lambda: check_model(model, ids))  # noqa: B023
        found, compare_ms = timed(lambda: introduced(before, after))  # noqa: B023
        print(f"{name}: {len(list(model)):,} entities, {applicable:,} elements the IDS applies to, "
              f"{len(before.failures):,} failing before; check {before_ms:.0f} ms before, {after_ms:.0f} ms after "
              f"a {len(doors)}-door change; introduced {len(found)} in {compare_ms:.1f} ms")


if __name__ == "__main__":
    main()
