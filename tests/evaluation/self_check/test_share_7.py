"""Share 7 of the shipped suite's self-check (see shares.py)."""
import pytest

from cloud.evaluation.tasks import Task
from tests.evaluation.self_check.shares import check_task, share


@pytest.mark.parametrize("task", share(7), ids=lambda t: t.id)
def test_the_solution_passes_and_the_wrong_answer_fails(task: Task) -> None:
    check_task(task)
