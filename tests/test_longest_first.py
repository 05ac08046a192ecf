"""The test scheduler (tests/support/longest_first.py): a sharded file's tests are dealt into units of about equal
expected time, each in the file's order, and run on several workers of a real pytest-xdist run; other files stay
whole on one worker."""
from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.support.longest_first import deal

REPO = Path(__file__).resolve().parents[1]


def test_deal_balances_the_units_and_keeps_the_files_order():
    nodeids = [f"t.py::test_{i}" for i in range(10)]
    expected = {n: float(s) for n, s in zip(nodeids, [9, 1, 1, 1, 5, 5, 2, 2, 3, 3], strict=True)}
    units = deal(nodeids, 3, expected)
    assert sorted(n for unit in units for n in unit) == sorted(nodeids)  # every test once
    loads = [sum(expected[n] for n in unit) for unit in units]
    assert max(loads) - min(loads) <= 1.0, loads  # 32 s in units of 11, 11, 10
    for unit in units:
        assert unit == sorted(unit, key=nodeids.index)


def test_deal_never_makes_more_units_than_tests_and_reckons_unknown_tests_at_the_known_mean():
    assert deal(["t.py::a", "t.py::b"], 4, {}) == [["t.py::a"], ["t.py::b"]]
    units = deal(["t.py::a", "t.py::b", "t.py::c"], 2, {"t.py::a": 4.0, "t.py::b": 2.0})
    assert units == [["t.py::a"], ["t.py::b", "t.py::c"]]  # c is reckoned at 3 s: 4 against 5


CONFTEST = """
from tests.support.longest_first import LongestFileFirst

def pytest_xdist_make_scheduler(config, log):
    return LongestFileFirst(config, log, expected={}, shards={"test_sharded.py": 3})
"""

TESTS = """
import os, time
from pathlib import Path
import pytest

@pytest.mark.parametrize("i", range({count}))
def test_it(i):
    time.sleep(0.3)
    Path(os.environ["WORKERS_SEEN"], "{name}-%d" % i).write_text(os.environ["PYTEST_XDIST_WORKER"])
"""


def test_a_real_xdist_run_spreads_a_sharded_file_over_workers_and_keeps_another_file_whole(tmp_path: Path):
    tree, seen = tmp_path / "tree", tmp_path / "seen"
    tree.mkdir()
    seen.mkdir()
    (tree / "conftest.py").write_text(CONFTEST)
    (tree / "test_sharded.py").write_text(TESTS.replace("{count}", "6").replace("{name}", "sharded"))
    (tree / "test_whole.py").write_text(TESTS.replace("{count}", "4").replace("{name}", "whole"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "WORKERS_SEEN": str(seen)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "3", "--dist", "loadfile", "-p", "no:cacheprovider",
                           "--rootdir", str(tree), str(tree)], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "10 passed" in done.stdout
    workers: dict[str, set[str]] = defaultdict(set)
    for record in seen.iterdir():
        workers[record.name.split("-")[0]].add(record.read_text())
    assert len(list(seen.iterdir())) == 10
    assert len(workers["sharded"]) >= 2, workers  # three units of two tests
    assert len(workers["whole"]) == 1, workers
