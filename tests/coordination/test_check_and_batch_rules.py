"""`nexus check --rules` and `nexus batch --rules` as real subprocesses on real files: a rule set file or one saved
for the team (`nexus rules save`), every finding with its check's severity, the exit status from the errors; a
batch checks each resulting model and writes one BCF archive per file, which its reports name."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from cloud.bcf.archive import read_bcf
from tests.batch.support import json_lines, run_batch
from tests.conformance.ifc_models import write_small_building
from tests.coordination.test_rules import DOORS_NEED_A_TAG
from tests.ifc_host.test_ids import FIRE_RATING_IDS

REPO = Path(__file__).resolve().parents[2]


def nexus(*args: str) -> subprocess.CompletedProcess:
    command = [shutil.which("nexus")] if shutil.which("nexus") else [sys.executable, "-m", "cloud.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=600, cwd=REPO,
                          env=os.environ.copy())


def _rule_set(folder: Path, severity: str) -> Path:
    (folder / "doors.ids").write_text(FIRE_RATING_IDS)
    path = folder / "rules.json"
    path.write_text(json.dumps({"name": "doors", "checks": [
        {"check": "ids", "ids": "doors.ids", "severity": severity},
        {"check": "script", "name": "Doors need a tag", "severity": "info", "code": DOORS_NEED_A_TAG}]}))
    return path


def test_check_runs_a_rule_set_file_and_exits_by_its_severities(tmp_path):
    model = write_small_building(tmp_path / "model.ifc")
    rules = _rule_set(tmp_path, "warning")
    done = nexus("check", str(model), "--rules", str(rules), "--json")
    assert done.returncode == 0, done.stderr  # warnings and infos only
    findings = [json.loads(line) for line in done.stdout.splitlines()]
    ids = [f for f in findings if f["rule"] == "IDS 'Door fire rating'"]
    assert len(ids) == 4 and {f["severity"] for f in ids} == {"warning"}  # 2 storeys x 2 doors
    assert [f["severity"] for f in findings if f["rule"] == "Doors need a tag"] == ["info"]
    rules.write_text(rules.read_text().replace('"warning"', '"error"'))
    assert nexus("check", str(model), "--rules", str(rules)).returncode == 1


def test_check_runs_a_saved_rule_set_by_name_and_refuses_an_unknown_one(tmp_path):
    model = write_small_building(tmp_path / "model.ifc")
    db = str(tmp_path / "store.db")
    saved = nexus("rules", "save", str(_rule_set(tmp_path, "error")), "--db", db)
    assert saved.returncode == 0 and "Saved rule set 'doors' (2 checks)" in saved.stdout, saved.stderr
    listed = nexus("rules", "list", "--db", db).stdout
    assert "doors: ids (error), Doors need a tag (info)" in listed
    done = nexus("check", str(model), "--rules", "doors", "--db", db)
    assert done.returncode == 1 and "rule set 'doors': 2 check(s)" in done.stderr
    assert "4 errors" in done.stdout
    unknown = nexus("check", str(model), "--rules", "nope", "--db", db)
    assert unknown.returncode == 2 and "--rules nope: no rule set 'nope'" in unknown.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('{"name": "x", "checks": [{"check": "clash", "severity": "red"}]}')
    refused = nexus("check", str(model), "--rules", str(broken))
    assert refused.returncode == 2 and "\"severity\" must be one of error, warning, info" in refused.stderr


def test_batch_rules_write_one_bcf_archive_per_file_named_in_the_reports(tmp_path):
    (tmp_path / "in").mkdir()
    for name in ("a", "b"):
        write_small_building(tmp_path / "in" / f"{name}.ifc")
    script = tmp_path / "tag.py"
    script.write_text("model.by_type('IfcDoor')[0].Tag = None\n")
    rules = _rule_set(tmp_path, "warning")
    out = tmp_path / "out"
    done = run_batch("--ifc", str(tmp_path / "in" / "*.ifc"), "--script", str(script), "--rules", str(rules),
                     "--out", str(out), "--json", "--db", str(tmp_path / "db"))
    assert done.returncode == 0, done.stderr[-3000:]
    per_file, summary = json_lines(done.stdout)
    assert summary["committed"] == 2
    for name in ("a.ifc", "b.ifc"):
        result = json.loads((out / ".nexus-batch" / "results" / f"{name}.json").read_text())
        assert result["rules"]["counts"] == {"error": 0, "warning": 4, "info": 2}  # the untagged door, the bad line
        archive = Path(result["rules"]["bcf"])
        assert archive == out / ".nexus-batch" / "bcf" / f"{name}.bcf"
        topics = read_bcf(archive).topics.values()
        assert sorted(t.topic.priority for t in topics) == ["Minor"] * 2 + ["Normal"] * 4
        assert str(archive) in (out / "report.md").read_text()
    from cloud.store import Store

    recorded = Store(tmp_path / "db").finding_runs.latest_finding_runs()  # each file's check run, for the admin console's chart
    assert sorted((r["model"], r["source"], r["warnings"], r["infos"]) for r in recorded) == [
        ("a.ifc", "batch", 4, 2), ("b.ifc", "batch", 4, 2)]
    refused = run_batch("--ifc", str(tmp_path / "in" / "*.ifc"), "--script", str(script), "--rules", "nope",
                        "--out", str(tmp_path / "out2"), "--db", str(tmp_path / "db"))
    assert refused.returncode == 2 and "--rules nope: no rule set 'nope'" in refused.stderr
    assert not (tmp_path / "out2").exists()
