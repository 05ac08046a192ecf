"""`--dist loadfile`, longest work first, the longest files in shards: each test file still runs whole on one worker
(module-scoped servers and browsers), except the files shards.json names, and a free worker takes the unit
expected to take longest instead of the next one in order.

xdist's own order is by number of tests, so a file of one or two long tests (a batch killed mid-run, a federated
clearance check) started last and ran alone while the other workers had finished: the run took as long as its
last file. And one file longer than a worker's share of the run is the run's critical path however it is ordered
(the corpus views took 512 s on one worker of a 17-minute run): shards.json names such files with a number of
shards, and their tests are dealt into that many units, the longest test into the lightest unit, each unit keeping
the file's order. A test's module-scoped fixtures are then set up once per unit rather than once per file, so a
file goes there only when its tests are independent of each other and its module setup is cheap next to it.

Expected times come from durations.json (seconds per file and, for the sharded files, per test, from a full run's
JUnit XML: `python -m tests.support.longest_first JUNIT.xml` rewrites it); a file it does not name is reckoned at
DEFAULT_TEST_S per test. A stale figure only changes the order and the dealing, never what runs."""
from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path
from typing import Any

from xdist.scheduler import LoadFileScheduling

DURATIONS = Path(__file__).with_name("durations.json")
SHARDS = Path(__file__).with_name("shards.json")
DEFAULT_TEST_S = 1.0


def _json(path: Path) -> dict[str, Any]:
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def expected_seconds() -> dict[str, float]:
    """Seconds per file ("tests/x.py") and per test of a sharded file ("tests/x.py::test_y[z]")."""
    return {str(k): float(v) for k, v in _json(DURATIONS).items()}


def shard_counts() -> dict[str, int]:
    return {str(k): int(v) for k, v in _json(SHARDS).items() if int(v) > 1}


def deal(nodeids: list[str], shards: int, expected: dict[str, float]) -> list[list[str]]:
    """The tests of one file in `shards` units of about equal expected time, each in the file's order."""
    known = [expected[n] for n in nodeids if n in expected]
    unknown_s = sum(known) / len(known) if known else DEFAULT_TEST_S
    seconds = {n: expected.get(n, unknown_s) for n in nodeids}
    units: list[list[str]] = [[] for _ in range(min(shards, len(nodeids)))]
    loads = [0.0] * len(units)
    for nodeid in sorted(nodeids, key=lambda n: -seconds[n]):
        lightest = loads.index(min(loads))
        units[lightest].append(nodeid)
        loads[lightest] += seconds[nodeid]
    order = {n: i for i, n in enumerate(nodeids)}
    return [sorted(unit, key=order.__getitem__) for unit in units]


class LongestFileFirst(LoadFileScheduling):
    def __init__(self, config: Any, log: Any = None, expected: dict[str, float] | None = None,
                 shards: dict[str, int] | None = None) -> None:
        super().__init__(config, log)
        self._expected = expected_seconds() if expected is None else expected
        self._shards = shard_counts() if shards is None else shards
        self._unit_of: dict[str, str] | None = None  # nodeid -> unit, for the tests of sharded files
        self._unit_s: dict[str, float] = {}

    def _split_scope(self, nodeid: str) -> str:
        file = super()._split_scope(nodeid)
        if file not in self._shards:
            return file
        if self._unit_of is None:
            self._unit_of = self._deal_sharded_files(self.collection or [])
        return self._unit_of.get(nodeid, file)

    def _deal_sharded_files(self, collection: list[str]) -> dict[str, str]:
        by_file: dict[str, list[str]] = defaultdict(list)
        for nodeid in collection:
            file = nodeid.split("::", 1)[0]
            if file in self._shards:
                by_file[file].append(nodeid)
        unit_of = {}
        for file, nodeids in by_file.items():
            units = deal(nodeids, self._shards[file], self._expected)
            per_test = sum(self._expected.get(n, 0.0) for n in nodeids) or None
            for k, unit in enumerate(units):
                name = f"{file}::shard-{k + 1}-of-{len(units)}"
                unit_of.update((n, name) for n in unit)
                if per_test is not None:
                    self._unit_s[name] = sum(self._expected.get(n, 0.0) for n in unit)
                elif file in self._expected:
                    self._unit_s[name] = self._expected[file] * len(unit) / len(nodeids)
        return unit_of

    def _weight(self, scope: str) -> float:
        known = self._unit_s.get(scope, self._expected.get(scope))
        return known if known is not None else DEFAULT_TEST_S * len(self.workqueue[scope])

    def _assign_work_unit(self, node: Any) -> None:
        longest = max(self.workqueue, key=self._weight)
        self.workqueue.move_to_end(longest, last=False)  # the parent takes the first unit of the queue
        super()._assign_work_unit(node)


def figures(junit_xml: Path, sharded: set[str]) -> dict[str, float]:
    """Seconds per test file (setup, call and teardown of every test in it) from pytest's --junitxml, and per test
    for the files in `sharded`."""
    totals: dict[str, float] = defaultdict(float)
    tests: dict[str, float] = defaultdict(float)
    for case in ElementTree.parse(junit_xml).iter("testcase"):
        module = case.get("classname", "").split(".")
        classes: list[str] = []
        # classname is the dotted module path, plus a class name when the test is a method
        while module and not Path(*module).with_suffix(".py").is_file():
            classes.insert(0, module.pop())
        if module:
            file = str(Path(*module).with_suffix(".py"))
            seconds = float(case.get("time") or 0.0)
            totals[file] += seconds
            if file in sharded:
                tests["::".join([file, *classes, case.get("name", "")])] += seconds
    by_file = {name: round(s, 1) for name, s in sorted(totals.items(), key=lambda kv: -kv[1])}
    return by_file | {name: round(s, 1) for name, s in sorted(tests.items())}


if __name__ == "__main__":  # python -m tests.support.longest_first JUNIT.xml (from the checkout's root)
    DURATIONS.write_text(json.dumps(figures(Path(sys.argv[1]), set(shard_counts())), indent=0) + "\n",
                         encoding="utf-8")
