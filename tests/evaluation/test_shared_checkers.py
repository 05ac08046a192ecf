"""Checkers of one suite share code through a relative import (`from .shared import answers`); the shipped
suite does, and every one of its checkers loads."""
from __future__ import annotations

from pathlib import Path

from cloud.evaluation.checker_loader import load_checker, run_checker
from cloud.evaluation.tasks import load_suite
from tests.evaluation.conftest import SHIPPED

SHARED = "CALLS = []\n\ndef expecting(value):\n    def check(before, after, answer):\n" \
         "        CALLS.append(value)\n        return answer == value, f'wanted {value}'\n    return check\n"


def _suite(root: Path, shared: str) -> Path:
    checkers = root / "checkers"
    (checkers / "shared").mkdir(parents=True)
    (checkers / "shared" / "__init__.py").write_text("")
    (checkers / "shared" / "common.py").write_text(shared)
    for name, value in (("task-one", "1"), ("task-two", "2")):
        (checkers / f"{name}.py").write_text(f"from .shared import common\n\ncheck = common.expecting({value!r})\n")
    return checkers


def test_checkers_share_one_module_of_their_suite_and_suites_do_not_mix(tmp_path: Path):
    first = _suite(tmp_path / "first", SHARED)
    other = _suite(tmp_path / "other", SHARED.replace("answer == value", "answer == 'other'"))

    assert run_checker(first / "task-one.py", None, None, "1") == (True, "wanted 1")
    assert run_checker(first / "task-two.py", None, None, "1") == (False, "wanted 2")
    assert run_checker(other / "task-one.py", None, None, "1") == (False, "wanted 1")  # its own shared module

    one, two = load_checker(first / "task-one.py"), load_checker(first / "task-two.py")
    assert one.common is two.common and one.common.CALLS == ["1", "2"]  # loaded once for the suite
    assert load_checker(other / "task-one.py").common is not one.common


def test_a_checker_whose_shared_module_is_missing_fails_with_why(tmp_path: Path):
    checkers = tmp_path / "checkers"
    checkers.mkdir()
    (checkers / "lonely.py").write_text("from .shared import nowhere\n\ncheck = nowhere.check\n")
    passed, detail = run_checker(checkers / "lonely.py", None, None, "")
    assert passed is False and "cannot load" in detail and "shared" in detail


def test_every_shipped_checker_loads_and_the_near_duplicates_share_their_code():
    suite = load_suite(SHIPPED)
    sharing = 0
    for task in suite.tasks:
        module = load_checker(task.check)
        assert callable(module.check), task.id
        sharing += "from .shared import" in task.check.read_text()
    assert sharing >= 40
    assert len(list((SHIPPED / "checkers" / "shared").glob("*.py"))) >= 2
