"""Benchmark: clash detection and BCF export (issue 27), by hand.

    python bench/bench_clash.py [--bcf-suite DIR] [--scale 40] [--findings 500] [--snapshot-px 400] [--keep DIR]

1. buildingSMART's federated pair (Architectural.ifc against MEP.ifc, from --bcf-suite or $NEXUS_BCF_SUITE): hard
   clashes and clearance 0.3 m through ifc_host/clash.py, beside IfcOpenShell's ifcclash run directly (the peer:
   the same engine without the product's findings).
2. Two generated ~100k-entity models (`nexus sample-model --scale K`, seeds 0 and 1: the same site, different plans,
   so their walls, slabs and doors cross everywhere): the same two checks.
3. BCF export of N findings (elements of a generated model, or of --export-model, one topic each): 2.1 with the
   product's rendered snapshots, and 2.1 and 3.0 without them (the floor: XML, bounding boxes and cameras only).
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ifcopenshell  # noqa: E402

from cloud.bcf.export import export_findings  # noqa: E402
from ifc_host.clash import DEFAULT_TOLERANCE, clash_findings  # noqa: E402
from ifc_host.findings import ElementRef, Finding  # noqa: E402
from ifc_host.sample import write_sample_model  # noqa: E402


def timed(work):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    result = work()
    return result, time.perf_counter() - start


def raw_ifcclash(a: Path, b: Path, clearance: float | None) -> int:
    from ifcclash.ifcclash import Clasher, ClashSettings

    settings = ClashSettings()
    settings.logger = logging.getLogger("bench.ifcclash")
    clasher = Clasher(settings)
    clash_set = {"name": "bench", "a": [{"file": str(a)}], "b": [{"file": str(b)}], "check_all": True}
    if clearance is None:
        clash_set.update(mode="intersection", tolerance=DEFAULT_TOLERANCE)
    else:
        clash_set.update(mode="clearance", clearance=clearance)
    clasher.clash_sets = [clash_set]
    clasher.clash()
    return len(clash_set["clashes"])


def clash_rows(label: str, a: Path, b: Path) -> None:
    entities = sum(len(list(ifcopenshell.open(str(p)))) for p in (a, b))
    for clearance in (None, 0.3):
        mode = "hard" if clearance is None else f"clearance {clearance} m"
        findings, ours = timed(lambda: clash_findings(a, [b], clearance=clearance))  # noqa: B023
        count, peer = timed(lambda: raw_ifcclash(a, b, clearance))  # noqa: B023
        print(f"{label:<34} {entities:>9,} {mode:<18} {len(findings):>8,} {ours:>9.1f} s "
              f"{count:>8,} {peer:>9.1f} s", flush=True)


def export_rows(model: Path, count: int, snapshot_count: int, snapshot_px: int, work: Path) -> None:
    opened = ifcopenshell.open(str(model))
    elements = [e for e in opened.by_type("IfcElement") if not e.is_a("IfcFeatureElement")][:count]
    findings = [Finding("bench", "warning", f"{e.is_a()} {e.Name}", "benchmark finding",
                        (ElementRef.of(e, model.name),)) for e in elements]
    for version, snapshots in (("2.1", True), ("2.1", False), ("3.0", False)):
        out = work / f"bench-{version}-{snapshots}.bcf"
        chosen = findings[:snapshot_count] if snapshots else findings
        _, seconds = timed(lambda: export_findings(chosen, out, version=version,  # noqa: B023
                                                   models={model.name: model}, snapshots=snapshots,  # noqa: B023
                                                   snapshot_px=snapshot_px))
        what = f"{len(chosen)} topics, " + (f"snapshots {snapshot_px}px" if snapshots else "no snapshots")
        print(f"BCF {version} export: {what:<36} {seconds:>8.1f} s  {seconds / len(chosen) * 1000:>7.0f} ms/topic"
              f"  {out.stat().st_size / 1e6:>7.1f} MB", flush=True)

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bcf-suite", default=os.environ.get("NEXUS_BCF_SUITE", ""))
    parser.add_argument("--scale", type=int, default=40, help="sample-model scale (40: ~100k entities each)")
    parser.add_argument("--findings", type=int, default=500)
    parser.add_argument("--snapshot-px", type=int, default=400)
    parser.add_argument("--snapshot-findings", type=int, default=500,
                        help="how many of the findings get a snapshot (each is a render: ~5-10 s on 2 cores)")
    parser.add_argument("--export-model", help="the model whose elements the BCF export's findings are about "
                        "(default: the generated model of seed 0; Architectural.ifc renders faster)")
    parser.add_argument("--keep", help="keep the generated models and archives in this folder")
    parser.add_argument("--skip", nargs="*", default=[], choices=["pair", "generated", "export"])
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-clash-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"{'models':<34} {'entities':>9} {'mode':<18} {'findings':>8} {'nexus check':>11} {'ifcclash':>8} "
          f"{'ifcclash':>11}")
    if "pair" not in args.skip:
        ifcs = Path(args.bcf_suite, "Test Cases", "IFCs")
        if (ifcs / "MEP.ifc").is_file():
            clash_rows("Architectural.ifc / MEP.ifc", ifcs / "Architectural.ifc", ifcs / "MEP.ifc")
        else:
            print(f"(the federated pair is not at {ifcs}: pass --bcf-suite or set NEXUS_BCF_SUITE)")
    models = [work / f"generated-{seed}.ifc" for seed in (0, 1)]
    for seed, path in enumerate(models):
        if not path.is_file() and ("generated" not in args.skip or ("export" not in args.skip
                                                                     and not args.export_model)):
            write_sample_model(path, storeys=3, seed=seed, scale=args.scale)
    if "generated" not in args.skip:
        clash_rows(f"generated --scale {args.scale} (seeds 0, 1)", *models)
    if "export" not in args.skip:
        export_rows(Path(args.export_model) if args.export_model else models[0], args.findings,
                    args.snapshot_findings, args.snapshot_px, work)
    print(f"(files in {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
