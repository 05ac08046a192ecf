"""`nexus batch` on files a script changes nothing in (issue 22, item 6): they are "unchanged", no output is
written for them, and the counts in the JSON lines, report.md and report.html say so. Real files: three corpus
files without doors (shipped by PyPI packages: scripts/corpus.sh installs them), a Revit export with doors and
a generated sample building, run through the real CLI, IFC hosts and keepers."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import ifcopenshell

from tests.batch.support import json_lines, run_batch, sha, write_sample
from tests.corpus.corpus_files import manifest

# Three, not the two files changed: the counts in the reports tell committed from unchanged.
WITHOUT_DOORS = ("Building-Architecture.ifc", "Building-Hvac.ifc", "small_building.ifc")
WITH_DOORS = ("basic_demo.ifc",)
RENUMBER = '''
for number, door in enumerate(sorted(model.by_type("IfcDoor"), key=lambda d: d.id()), start=1):
    door.Tag = f"D-{number:03d}"
'''


def _models(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True)
    wanted = {*WITHOUT_DOORS, *WITH_DOORS}
    entries = {e.file: e for e in manifest() if e.file in wanted}
    paths = {}
    for name in sorted(wanted):
        entry = entries[name]
        assert entry.present(), f"{entry.location} missing: run scripts/corpus.sh (scripts/test does)"
        paths[name] = folder / name
        shutil.copyfile(entry.location, paths[name])
    paths["sample.ifc"] = write_sample(folder / "sample.ifc", seed=0)
    for name in WITHOUT_DOORS:
        assert not ifcopenshell.open(str(paths[name])).by_type("IfcDoor"), name
    return paths


def _table(markdown: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| ([^|]+?) \| ([^|]+?) \|$", markdown, re.MULTILINE)}


def test_files_the_script_changes_nothing_in_are_unchanged_and_get_no_output(tmp_path: Path):
    models = _models(tmp_path / "in")
    inputs = {name: sha(path) for name, path in models.items()}
    script = tmp_path / "renumber.py"
    script.write_text(RENUMBER)
    out = tmp_path / "out"
    done = run_batch("--ifc", str(tmp_path / "in" / "*.ifc"), "--script", str(script), "--out", str(out),
                     "--json", "--db", str(tmp_path / "nexus.db"))
    assert done.returncode == 0, done.stderr
    per_file, summary = json_lines(done.stdout)
    changed = {*WITH_DOORS, "sample.ifc"}
    for name in models:
        line = per_file[name]
        assert line["ok"] and line["error"] is None, line
        if name in changed:
            assert line["committed"] and line["outcome"] == "committed" and line["changes"]["modified"] > 0, line
        else:
            assert not line["committed"] and line["outcome"] == "unchanged", line
            assert not any(line["changes"].values()), line
    assert (summary["committed"], summary["unchanged"], summary["failed"]) == (2, 3, 0)
    assert sorted(p.name for p in out.glob("*.ifc")) == sorted(changed)  # nothing written for the others
    assert {name: sha(path) for name, path in models.items()} == inputs
    for name in changed:
        tags = sorted(d.Tag for d in ifcopenshell.open(str(out / name)).by_type("IfcDoor"))
        assert tags and tags == [f"D-{n:03d}" for n in range(1, len(tags) + 1)]

    markdown = (out / "report.md").read_text(encoding="utf-8")
    table = _table(markdown)
    assert (table["committed"], table["unchanged (ran, nothing to commit)"], table["failed"]) == ("2", "3", "0")
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[1] for line in markdown.splitlines()
            if line.startswith("| ") and line.split(" | ")[0].strip("| ").endswith(".ifc")}
    assert rows == {name: "committed" if name in changed else "unchanged" for name in models}, rows
    page = (out / "report.html").read_text(encoding="utf-8")
    assert '<td class="committed">2</td>' in page and '<td class="unchanged">3</td>' in page

    # The committed outputs again: every door already has its number, so writing it changes nothing.
    again = tmp_path / "again"
    rerun = run_batch("--ifc", str(out / "*.ifc"), "--script", str(script), "--out", str(again), "--json",
                      "--db", str(tmp_path / "nexus.db"))
    assert rerun.returncode == 0, rerun.stderr
    per_file, summary = json_lines(rerun.stdout)
    assert {name: line["outcome"] for name, line in per_file.items()} == {name: "unchanged" for name in changed}
    assert (summary["committed"], summary["unchanged"]) == (0, 2)
    assert not list(again.glob("*.ifc"))


def test_in_place_an_unchanged_input_is_left_as_it_is(tmp_path: Path):
    folder = tmp_path / "in"
    folder.mkdir()
    entry = next(e for e in manifest() if e.file == "small_building.ifc")
    assert entry.present(), f"{entry.location} missing: run scripts/corpus.sh (scripts/test does)"
    untouched = folder / entry.file
    shutil.copyfile(entry.location, untouched)
    changed = write_sample(folder / "sample.ifc", seed=0)
    before = {p.name: (sha(p), p.stat().st_mtime_ns) for p in (untouched, changed)}
    script = tmp_path / "renumber.py"
    script.write_text(RENUMBER)
    done = run_batch("--ifc", str(folder / "*.ifc"), "--script", str(script), "--in-place", "--state",
                     str(tmp_path / "state"), "--json", "--db", str(tmp_path / "nexus.db"))
    assert done.returncode == 0, done.stderr
    per_file, summary = json_lines(done.stdout)
    assert {name: line["outcome"] for name, line in per_file.items()} == {
        untouched.name: "unchanged", changed.name: "committed"}
    assert (sha(untouched), untouched.stat().st_mtime_ns) == before[untouched.name]  # bytes and date
    assert sha(changed) != before[changed.name][0]
    assert not [p.name for p in folder.iterdir() if p.name not in before]  # no leftover temporary file
