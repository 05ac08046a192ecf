"""`nexus batch --script` on the embedded pool: exact changes in --out, inputs untouched, bad files reported
and left without output, reruns redo nothing, reports written."""
from __future__ import annotations

import json

import pytest

from tests.batch.support import SCRIPT, assert_exactly_the_change, json_lines, make_models, run_batch, sha


@pytest.fixture(scope="module")
def first_batch(models, tmp_path_factory):
    folder = models["good"][0].parent
    work = tmp_path_factory.mktemp("batch")
    script = work / "fire_rating.py"
    script.write_text(SCRIPT)
    inputs = {p.name: sha(p) for p in folder.iterdir()}
    out = work / "out"
    done = run_batch("--ifc", str(folder / "*.ifc"), "--script", str(script), "--out", str(out), "--workers", "2",
                     "--json", "--db", str(work / "nexus.db"))
    return {"folder": folder, "work": work, "script": script, "out": out, "inputs": inputs, "done": done}


def test_every_good_file_gets_exactly_the_change_and_bad_ones_nothing(models, first_batch):
    done, out, folder = first_batch["done"], first_batch["out"], first_batch["folder"]
    assert done.returncode == 1, done.stderr  # some files failed
    per_file, summary = json_lines(done.stdout)
    assert set(per_file) == {p.name for p in models["good"] + models["bad"]}
    for path in models["good"]:
        line = per_file[path.name]
        assert line["ok"] and line["committed"] and line["error"] is None, line
        assert line["changes"]["modified"] > 0 and set(line) == {"file", "ok", "committed", "outcome", "changes",
                                                                  "error", "seconds"}
        assert_exactly_the_change(path, out / path.name)
    assert "truncated" in per_file["truncated.ifc"]["error"]
    assert "not ready for the new standard" in per_file["failing.ifc"]["error"]
    for path in models["bad"]:
        assert not per_file[path.name]["ok"] and not per_file[path.name]["committed"]
        assert not (out / path.name).exists(), f"{path.name} failed but left an output"
    assert not list(out.glob("*.partial")), "a temporary output was left behind"
    assert {p.name: sha(p) for p in folder.iterdir()} == first_batch["inputs"], "an input was modified"
    assert summary["files"] == len(per_file) and summary["failed"] == 2 and summary["committed"] == len(models["good"])


def test_reports_in_markdown_and_html_with_a_chart(models, first_batch):
    out = first_batch["out"]
    markdown = (out / "report.md").read_text()
    page = (out / "report.html").read_text()
    for path in models["good"] + models["bad"]:
        assert f"| {path.name} |" in markdown and f"<td>{path.name}</td>" in page
    assert "| failing.ifc | failed |" in markdown and "RuntimeError" in markdown
    assert "modified" in markdown and "attributes" in markdown  # counts by kind from the change report
    assert page.count("<rect ") == len(models["good"]) + len(models["bad"]) and "<svg" in page
    assert "<script" not in page and "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_each_file_records_its_change_report_with_before_and_after(models, first_batch):
    state = first_batch["out"] / ".nexus-batch"
    result = json.loads((state / "results" / f"{models['good'][0].name}.json").read_text())
    elements = [e for detail in result["change_details"] for e in detail["elements"]]
    assert elements and any("Description" in json.dumps(e) for e in elements)
    assert result["session_id"] and result["output_sha256"] == sha(first_batch["out"] / models["good"][0].name)
    manifest = json.loads((state / "manifest.json").read_text())
    assert manifest["script"] == SCRIPT and len(manifest["files"]) == len(models["good"]) + len(models["bad"])


def test_a_rerun_redoes_nothing_and_resume_finishes_what_is_missing(models, first_batch):
    out, work = first_batch["out"], first_batch["work"]
    outputs = {p.name: sha(p) for p in out.glob("*.ifc")}
    results = {p.name: p.read_text() for p in (out / ".nexus-batch" / "results").iterdir()}
    # a lost result: only that file is redone
    redo = models["good"][3].name
    (out / ".nexus-batch" / "results" / f"{redo}.json").unlink()
    again = run_batch("--resume", str(out), "--json", "--db", str(work / "nexus.db"))
    per_file, summary = json_lines(again.stdout)
    assert summary["failed"] == 2 and len(per_file) == len(results)
    now = {p.name: p.read_text() for p in (out / ".nexus-batch" / "results").iterdir()}
    assert {k for k in now if now[k] != results.get(k)} == {f"{redo}.json"}
    assert {p.name: sha(p) for p in out.glob("*.ifc")} == outputs  # the redone file: the same result


def test_in_place_overwrites_only_the_changed_inputs(tmp_path):
    files = make_models(tmp_path / "in", generated=1, corpus=False)  # one good file, a truncated and a failing one
    originals = {p.name: sha(p) for p in files["good"] + files["bad"]}
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    copies = tmp_path / "before"
    copies.mkdir()
    for path in files["good"]:
        (copies / path.name).write_bytes(path.read_bytes())
    refused = run_batch("--ifc", str(tmp_path / "in" / "*.ifc"), "--script", str(script), "--db",
                        str(tmp_path / "db"))
    assert refused.returncode == 2 and "--in-place" in refused.stderr
    done = run_batch("--ifc", str(tmp_path / "in" / "*.ifc"), "--script", str(script), "--in-place",
                     "--state", str(tmp_path / "state"), "--json", "--db", str(tmp_path / "db"))
    per_file, _ = json_lines(done.stdout)
    for path in files["good"]:
        assert per_file[path.name]["committed"]
        assert_exactly_the_change(copies / path.name, path)
    for path in files["bad"]:
        assert sha(path) == originals[path.name]
    # rerun in place: every changed file is recognised as done, nothing is written again
    changed = {p.name: sha(p) for p in files["good"]}
    rerun = run_batch("--resume", str(tmp_path / "state"), "--json", "--db", str(tmp_path / "db"))
    assert json_lines(rerun.stdout)[1]["committed"] == len(files["good"])
    assert {p.name: sha(p) for p in files["good"]} == changed


def test_readonly_runs_the_script_as_a_collection_and_writes_nothing(tmp_path):
    files = make_models(tmp_path / "in", generated=1, corpus=False)
    script = tmp_path / "count.py"
    script.write_text('print("walls:", len(model.by_type("IfcWall")))\n')
    done = run_batch("--ifc", str(files["good"][0]), "--script", str(script), "--out", str(tmp_path / "out"),
                     "--policy", "readonly", "--json", "--db", str(tmp_path / "db"))
    per_file, summary = json_lines(done.stdout)
    line = per_file[files["good"][0].name]
    assert done.returncode == 0 and line["ok"] and not line["committed"] and summary["unchanged"] == 1
    assert not list((tmp_path / "out").glob("*.ifc"))
    result = next((tmp_path / "out" / ".nexus-batch" / "results").iterdir())
    assert "walls:" in json.loads(result.read_text())["stdout"]


@pytest.mark.parametrize("args, complaint", [
    (["--script", "s.py"], "--ifc"),
    (["--ifc", "nothing-here/*.ifc", "--script", "s.py", "--out", "o"], "no files match"),
    (["--ifc", "IN", "--prompt", "do it", "--out", "o"], "--model"),
    (["--ifc", "IN", "--script", "missing.py", "--out", "o"], "cannot read the script"),
    (["--ifc", "IN", "--script", "s.py", "--out", "OUTSELF"], "inputs' own folder"),
    (["--ifc", "IN", "--script", "s.py", "--out", "o", "--in-place"], "cannot be combined"),
    (["--resume", "o"], "holds no batch"),
])
def test_bad_command_lines_are_refused_with_a_reason(tmp_path, monkeypatch, args, complaint):
    monkeypatch.chdir(tmp_path)
    files = make_models(tmp_path / "in", generated=1, corpus=False)
    (tmp_path / "s.py").write_text(SCRIPT)
    args = [str(files["good"][0]) if a == "IN" else str(tmp_path / "in") if a == "OUTSELF" else a for a in args]
    done = run_batch(*args, "--db", str(tmp_path / "db"))
    assert done.returncode == 2 and complaint in done.stderr, done.stderr


def test_validation_block_fails_the_file_and_warn_records_the_findings(tmp_path):
    files = make_models(tmp_path / "in", generated=1, corpus=False)
    source = files["good"][0]
    script = tmp_path / "duplicate_guid.py"
    script.write_text('walls = model.by_type("IfcWall")\nwalls[1].GlobalId = walls[0].GlobalId\n')
    original = sha(source)
    blocked = run_batch("--ifc", str(source), "--script", str(script), "--out", str(tmp_path / "blocked"),
                        "--validation", "block", "--json", "--db", str(tmp_path / "db"))
    line = json_lines(blocked.stdout)[0][source.name]
    assert blocked.returncode == 1 and not line["ok"] and "GlobalId" in line["error"]
    assert not (tmp_path / "blocked" / source.name).exists() and sha(source) == original
    warned = run_batch("--ifc", str(source), "--script", str(script), "--out", str(tmp_path / "warned"),
                       "--json", "--db", str(tmp_path / "db"))
    assert json_lines(warned.stdout)[0][source.name]["committed"]
    result = json.loads((tmp_path / "warned" / ".nexus-batch" / "results" / f"{source.name}.json").read_text())
    assert [f["rule"] for f in result["validation"]] == ["IfcRoot.UR1 unique GlobalId"]
    assert "is also the GlobalId" in (tmp_path / "warned" / "report.md").read_text()
    assert sha(source) == original
