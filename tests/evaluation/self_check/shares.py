"""The shipped suite's self-check, split so that pytest-xdist spreads it over its workers.

Every task's reference solution must pass and its plausible wrong answer (evals/wrong/<id>.json), where there is
one, must fail (a failure, not an error). The tasks are dealt round-robin, by sorted id, into SHARES test files
(test_share_<k>.py): the suite runs `--dist loadfile`, which keeps a file on one worker, so one file would hold
one worker for the whole suite (about five minutes). One task, CLI_TASK, is run through `nexus eval` instead
(tests/evaluation/test_self_check.py), so that the command's own path over the shipped suite stays checked."""
from __future__ import annotations

import functools

from cloud.evaluation.runner import TaskRun, run_all
from cloud.evaluation.tasks import Task, load_suite
from tests.evaluation.conftest import ROOT, SHIPPED

SOLUTIONS, WRONG = f"scripted:{ROOT / 'evals' / 'solutions'}", f"scripted:{ROOT / 'evals' / 'wrong'}"
SHARES = 8
CLI_TASK, CLI_TAG = "k-duct-clearance", "clearance"  # the only task with this tag


@functools.cache
def _shipped() -> tuple[Task, ...]:
    return tuple(sorted(load_suite(SHIPPED).tasks, key=lambda t: t.id))


def shipped_tasks() -> list[Task]:
    return list(_shipped())


def wrong_ids() -> set[str]:
    return {p.stem for p in (SHIPPED / "wrong").glob("*.json")}


def share(k: int) -> list[Task]:
    """The k-th of SHARES round-robin shares of the shipped tasks (CLI_TASK left out), for parametrize."""
    tasks = [t for t in shipped_tasks() if t.id != CLI_TASK]
    return tasks[k::SHARES]


def check_task(task: Task) -> None:
    """Run the solution and (if there is one) the wrong answer, two at a time as `nexus eval --parallel 2` does."""
    has_wrong = task.id in wrong_ids()
    specs = [SOLUTIONS, WRONG] if has_wrong else [SOLUTIONS]
    runs: list[TaskRun] = run_all([task], specs, parallel=2)
    assert [r.model for r in runs] == specs
    problems = []
    if runs[0].status != "pass":
        problems.append(f"solution {task.id}: {runs[0].status}: {runs[0].detail[:300]}")
    if has_wrong and runs[1].status != "fail":
        problems.append(f"wrong {task.id}: {runs[1].status}: {runs[1].detail[:300]}")
    assert not problems, "\n".join(problems)
