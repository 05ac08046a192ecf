"""The shipped suite proves its checkers and the harness: every reference solution passes, every plausible
wrong one fails (a failure, not an error). Corpus tasks run only where corpus/ files are present.

The tasks themselves run in tests/evaluation/self_check/test_share_*.py (spread over the workers), except
CLI_TASK, which runs here through `nexus eval` as a person would."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cloud.evaluation.tasks import corpus_dirs, load_suite
from tests.evaluation.conftest import ROOT, SHIPPED
from tests.evaluation.self_check.shares import CLI_TAG, CLI_TASK, SHARES, share, shipped_tasks, wrong_ids

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


def test_the_shares_and_the_command_run_every_task_once():
    dealt = [t.id for k in range(SHARES) for t in share(k)] + [CLI_TASK]
    assert sorted(dealt) == [t.id for t in shipped_tasks()]
    assert [t.id for t in load_suite(SHIPPED, [CLI_TAG]).tasks] == [CLI_TASK]
    assert CLI_TASK in wrong_ids()  # the command's run shows a wrong answer failing too


def test_solutions_pass_and_wrong_answers_fail_through_the_command(tmp_path):
    done = subprocess.run([sys.executable, "-m", "cloud.cli", "eval", "evals", "--tags", CLI_TAG,
                           "--model", SOLUTIONS, "--model", WRONG,
                           "--parallel", "2", "--json", "--out", str(tmp_path / "report")],
                          capture_output=True, text=True, cwd=ROOT, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    runs = [r for r in lines if not r.get("summary")]
    problems = []
    for run in runs:
        if run["model"] == SOLUTIONS and run["status"] != "pass":
            problems.append(f"solution {run['task']}: {run['status']}: {run['detail'][:300]}")
        if run["model"] == WRONG and run["task"] in wrong_ids() and run["status"] != "fail":
            problems.append(f"wrong {run['task']}: {run['status']}: {run['detail'][:300]}")
    assert not problems, "\n".join(problems)
    ran = {r["task"] for r in runs if r["model"] == WRONG and r["status"] == "fail"}
    assert ran == {CLI_TASK}
    assert lines[-1]["summary"] is True
    assert (lines[-1]["passed"], lines[-1]["failed"], lines[-1]["errors"]) == (1, 1, 0)
    assert all(Path(path).is_file() for path in lines[-1]["report"].values())
