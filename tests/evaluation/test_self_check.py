"""The shipped suite proves its checkers and the harness: every reference solution passes, every plausible
wrong one fails (a failure, not an error). Corpus tasks run only where corpus/ files are present."""
from __future__ import annotations

import json
import subprocess
import sys

from cloud.evaluation.tasks import corpus_dirs, load_suite
from tests.evaluation.conftest import ROOT, SHIPPED

SOLUTIONS, WRONG = "scripted:evals/solutions", "scripted:evals/wrong"
# Corpus tasks over files that packages ship (scripts/corpus.sh installs them into .cache/ifc-corpus): CI runs them.
REGISTRY_CORPUS_TASKS = {"c-revit-count-doors", "c-ifcos-rename-storey"}


def test_the_shipped_suite_is_complete():
    suite = load_suite(SHIPPED)
    everything = sorted(p.stem for p in (SHIPPED / "tasks").glob("*.json"))
    own = [t for t in suite.tasks if "corpus" not in t.tags]
    assert len(own) >= 40  # without the corpus: what CI runs
    assert sorted(p.stem for p in (SHIPPED / "solutions").glob("*.json")) == everything
    wrong = {p.stem for p in (SHIPPED / "wrong").glob("*.json")}
    assert wrong <= set(everything) and len(wrong) * 3 >= len(everything)
    kinds = {tag for t in suite.tasks for tag in t.tags}
    assert {"question", "audit", "edit"} <= kinds
    for task in suite.tasks:
        # inside the suite, or a corpus: file in a corpus folder (corpus/, .cache/ifc-corpus/, $NEXUS_IFC_CORPUS)
        assert any(task.model.is_relative_to(d.resolve()) for d in [SHIPPED, *corpus_dirs()]), task.id
    missing = REGISTRY_CORPUS_TASKS - {t.id for t in suite.tasks}
    assert not missing, f"{missing} skipped ({suite.skipped}): run scripts/corpus.sh (scripts/test does)"


def test_solutions_pass_and_wrong_answers_fail(tmp_path):
    done = subprocess.run([sys.executable, "-m", "cloud.cli", "eval", "evals", "--model", SOLUTIONS, "--model", WRONG,
                           "--parallel", "2", "--json", "--out", str(tmp_path / "report")],
                          capture_output=True, text=True, cwd=ROOT, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    runs = [r for r in lines if not r.get("summary")]
    wrong_ids = {p.stem for p in (SHIPPED / "wrong").glob("*.json")}
    problems = []
    for run in runs:
        if run["model"] == SOLUTIONS and run["status"] != "pass":
            problems.append(f"solution {run['task']}: {run['status']}: {run['detail'][:300]}")
        if run["model"] == WRONG and run["task"] in wrong_ids and run["status"] != "fail":
            problems.append(f"wrong {run['task']}: {run['status']}: {run['detail'][:300]}")
    assert not problems, "\n".join(problems)
    ran = {r["task"] for r in runs if r["model"] == WRONG and r["status"] == "fail"}
    assert ran == {t.id for t in load_suite(SHIPPED).tasks} & wrong_ids
    assert lines[-1]["summary"] is True
