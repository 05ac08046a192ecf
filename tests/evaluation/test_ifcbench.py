"""ifc-bench CSV import and its tolerant checker: numbers (with units), yes/no, lists, text."""
from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys

import pytest

from cloud.evaluation.ifcbench import ImportError_, import_csv
from cloud.evaluation.runner import run_all
from cloud.evaluation.tasks import load_suite
from cloud.evaluation.tolerant import matches
from tests.evaluation.conftest import ROOT, SHIPPED


@pytest.mark.parametrize("expected, answer, ok", [
    ("26", "There are 26 doors.", True),
    ("26", "There are 27 doors.", False),
    ("1,234", "about 1234", True),
    ("12.5 m2", "The total is 12.50 m².", True),
    ("12.5 m2", "It is 12.5 m.", False),  # a length is not an area
    ("12500 mm", "about 12.5 m", True),
    ("3.5 m", "3500 mm", True),
    ("7", "Level 3 sits at 7.0 m", True),
    ("22.425", "22.4 square metres", True),  # within 2%
    ("22.425", "20 m2", False),
    ("Yes", "Yes, it has one.", True),
    ("Yes", "No.", False),
    ("No", "No, none of them.", True),
    ("101, 102 and 103", "Rooms 101, 102, 103.", True),
    ("101, 102 and 103", "Rooms 101 and 103.", False),
    ("Level 2", "It is on level 2.", True),
    ("Erdgeschoss", "Dachgeschoss", False),
])
def test_the_tolerant_checker(expected, answer, ok):
    assert matches(expected, answer)[0] is ok, matches(expected, answer)


def test_a_csv_becomes_a_suite_that_runs(tmp_path):
    shutil.copyfile(SHIPPED / "models" / "small-office.ifc", tmp_path / "small.ifc")
    csv_path = tmp_path / "questions.csv"
    csv_path.write_text('question,answer,ifc_model,category\n'
                        'How many doors are there?,10,small.ifc,count\n'
                        '"How many storeys, in total?",1,small.ifc,count\n'
                        'Is there a corridor?,Yes,small.ifc,yes-no\n')
    suite_dir = tmp_path / "suite"
    assert import_csv(csv_path, suite_dir) == 3
    suite = load_suite(suite_dir)
    assert [t.policy for t in suite.tasks] == ["readonly"] * 3 and suite.tasks[0].tags == ("ifcbench", "category:count")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for task_id, text in [("ifcbench-0001", "There are 10 doors."), ("ifcbench-0002", "Two storeys."),
                          ("ifcbench-0003", "Yes: 1C1.")]:
        (scripts / f"{task_id}.json").write_text(json.dumps({"turns": [[{"text": text}]]}))
    results = run_all(suite.tasks, [f"scripted:{scripts}"], parallel=2)
    assert [r.status for r in results] == ["pass", "fail", "pass"]


def test_a_csv_without_the_columns_is_refused(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("q,a\nx,y\n")
    with pytest.raises(ImportError_, match="missing column"):
        import_csv(bad, tmp_path / "out")
    done = subprocess.run([sys.executable, "-m", "cloud.cli", "eval", str(bad), "--import-csv", str(tmp_path / "o")],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2 and "question,answer,ifc_model" in done.stderr


def test_a_hostile_answer_cell_stays_data(tmp_path):
    """Issue 23, H2: an answer holding triple quotes once closed a generated checker's docstring and ran in the
    eval process. Now the answer is only compared, as text or as a number."""
    shutil.copyfile(SHIPPED / "models" / "small-office.ifc", tmp_path / "small.ifc")
    marker = tmp_path / "ran"
    hostile = f'10"""; __import__("pathlib").Path(r"{marker}").write_text("ran"); """'
    csv_path = tmp_path / "questions.csv"
    with csv_path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question", "answer", "ifc_model"])
        writer.writerow(["What is the code?", hostile, "small.ifc"])
        writer.writerow(["And again?", hostile, "small.ifc"])
        writer.writerow(["What is the floor area?", "12.5 m2", "small.ifc"])
    suite_dir = tmp_path / "suite"
    assert import_csv(csv_path, suite_dir) == 3
    assert not list(suite_dir.rglob("*.py")), "no Python is written from a CSV"
    answer_file = json.loads((suite_dir / "checkers" / "ifcbench-0001.json").read_text())
    assert answer_file == {"expected_answer": hostile}
    assert sorted(p.name for p in (suite_dir / "models").iterdir()) == ["small.ifc"]  # placed once, inside
    suite = load_suite(suite_dir)
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for task_id, text in [("ifcbench-0001", f"The code is {hostile}"), ("ifcbench-0002", "The code is 10."),
                          ("ifcbench-0003", "The total is 12.50 m².")]:
        (scripts / f"{task_id}.json").write_text(json.dumps({"turns": [[{"text": text}]]}))
    results = run_all(suite.tasks, [f"scripted:{scripts}"], parallel=2)
    assert not marker.exists(), "the answer cell ran as code"
    assert [r.status for r in results] == ["pass", "fail", "pass"], [r.detail for r in results]
