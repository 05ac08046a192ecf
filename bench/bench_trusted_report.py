"""What the unforgeable change report costs a commit (issue 23 M3; issue 22 item 5). Run by hand.

The keeper now compares the model the script's process wrote with the committed one, record by record, and
works the report out from that. Per model, two measurements:

  in-process, one door renamed: the steps the commit did anyway (the script's process serialising the model,
  writing it beside the file, re-opening it checked) side by side with what the comparison adds (splitting
  and comparing the records, checking the changed ones against the parsed model, mapping them to elements),
  and the one-off serialisation of the committed model the first comparison needs;

  end to end, a real keeper (fork isolation) on a copy of the file: script_ms and commit_ms of the first
  commit (pays the one-off serialisation), of a second one, and of a run that writes every door's mark back
  unchanged (nothing is written).

    python bench/bench_trusted_report.py MODEL.ifc [MODEL.ifc ...]
    nexus sample-model /tmp/s200.ifc --scale 200 && python bench/bench_trusted_report.py /tmp/s200.ifc
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ifcopenshell  # noqa: E402

from ifc_host.changes import changes_between  # noqa: E402
from ifc_host.executor import IsolatedExecutor, execute_command  # noqa: E402
from ifc_host.model_diff import check_against_model, data_section, diff_records  # noqa: E402
from ifc_host.model_file import open_checked, write_beside  # noqa: E402

RENAME = "door = sorted(model.by_type('IfcDoor'), key=lambda d: d.id())[0]\ndoor.Name = 'bench ' + str(time.time())"
WRITE_BACK = "for door in model.by_type('IfcDoor'):\n    door.Tag = door.Tag\n    door.Name = door.Name"


def timed(step: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    value = step()
    return value, time.perf_counter() - started


def in_process(path: Path, work: Path) -> dict[str, float]:
    committed = open_checked(path)
    baseline, t_baseline = timed(lambda: data_section(committed.to_string().encode("utf-8")))
    edited = ifcopenshell.file.from_string(committed.to_string())
    doors = sorted(edited.by_type("IfcDoor") or edited.by_type("IfcWall"), key=lambda d: d.id())
    doors[0].Name = "renamed by the bench"
    data, t_serialise = timed(lambda: edited.to_string().encode("utf-8"))
    temp, t_write = timed(lambda: write_beside(work / "model.ifc", data))
    adopted, t_parse = timed(lambda: open_checked(temp))
    records, t_section = timed(lambda: data_section(data))
    diff, t_diff = timed(lambda: diff_records(baseline, records))
    _, t_check = timed(lambda: check_against_model(diff, adopted))
    changes, t_map = timed(lambda: changes_between(committed, adopted, diff.created, diff.deleted, diff.differing))
    temp.unlink()
    assert changes.modified == [doors[0].id()], changes.modified
    return {"entities": float(len(committed.entity_names())), "bytes": float(len(data)),
            "serialise": t_serialise, "write+fsync": t_write, "parse": t_parse,
            "compare": t_section + t_diff, "check": t_check, "map": t_map, "baseline (once)": t_baseline}


def end_to_end(path: Path, work: Path) -> list[tuple[str, dict[str, Any]]]:
    copy = work / f"e2e-{path.name}"
    shutil.copyfile(path, copy)
    runner = IsolatedExecutor(copy, isolation="fork")
    rows = []
    try:
        for n, (label, code) in enumerate((("first commit", "import time\n" + RENAME),
                                           ("second commit", "import time\n" + RENAME),
                                           ("written back unchanged", WRITE_BACK))):
            result = runner.execute(execute_command(f"bench{n}", "automate", code, 600))
            assert result["committed"], result.get("error")
            rows.append((label, result))
    finally:
        runner.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-trusted-") as folder:
        work = Path(folder)
        for path in args.models:
            figures = in_process(path, work)
            print(f"\n{path.name}: {figures['entities']:,.0f} entities, {figures['bytes'] / 1e6:.1f} MB")
            anyway = figures["serialise"] + figures["write+fsync"] + figures["parse"]
            added = figures["compare"] + figures["check"] + figures["map"]
            print(f"  commit did anyway: serialise {figures['serialise']:.2f} s + write+fsync "
                  f"{figures['write+fsync']:.2f} s + parse {figures['parse']:.2f} s = {anyway:.2f} s")
            print(f"  comparison adds:   compare {figures['compare']:.2f} s + check {figures['check']:.3f} s + map "
                  f"{figures['map']:.3f} s = {added:.2f} s ({100 * added / anyway:.0f} % of the floor); once per "
                  f"loaded model: baseline {figures['baseline (once)']:.2f} s")
            for label, result in end_to_end(path, work):
                print(f"  keeper, {label:<24} script {result['script_ms']:8.0f} ms   commit {result['commit_ms']:8.0f} ms"
                      f"   changes {sum(len(v) for v in result['changes'].values())}"
                      + ("   (nothing written)" if result.get("unchanged") else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
