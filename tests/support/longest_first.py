"""`--dist loadfile`, longest file first: each test file still runs whole on one worker (module-scoped servers
and browsers), but a free worker takes the file expected to take longest instead of the next one in order.

xdist's own order is by number of tests, so a file of one or two long tests (a batch killed mid-run, a federated
clearance check) started last and ran alone while the other workers had finished: the run took as long as its
last file. Expected times come from durations.json (seconds per file, from a full run's JUnit XML:
`python -m tests.support.longest_first JUNIT.xml` rewrites it); a file it does not name is reckoned at
DEFAULT_TEST_S per test. A stale figure only changes the order, never what runs."""
from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path
from typing import Any

from xdist.scheduler import LoadFileScheduling

DURATIONS = Path(__file__).with_name("durations.json")
DEFAULT_TEST_S = 1.0


def expected_seconds() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(DURATIONS.read_text(encoding="utf-8")).items()}
    except (OSError, ValueError, AttributeError):
        return {}


class LongestFileFirst(LoadFileScheduling):
    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        self._expected = expected_seconds()

    def _weight(self, scope: str) -> float:
        known = self._expected.get(scope)
        return known if known is not None else DEFAULT_TEST_S * len(self.workqueue[scope])

    def _assign_work_unit(self, node: Any) -> None:
        longest = max(self.workqueue, key=self._weight)
        self.workqueue.move_to_end(longest, last=False)  # the parent takes the first unit of the queue
        super()._assign_work_unit(node)


def per_file(junit_xml: Path) -> dict[str, float]:
    """Seconds per test file (setup, call and teardown of every test in it) from pytest's --junitxml."""
    totals: dict[str, float] = defaultdict(float)
    for case in ElementTree.parse(junit_xml).iter("testcase"):
        module = case.get("classname", "").split(".")
        # classname is the dotted module path, plus a class name when the test is a method
        while module and not Path(*module).with_suffix(".py").is_file():
            module = module[:-1]
        if module:
            totals[str(Path(*module).with_suffix(".py"))] += float(case.get("time") or 0.0)
    return {name: round(seconds, 1) for name, seconds in sorted(totals.items(), key=lambda kv: -kv[1])}


if __name__ == "__main__":  # python -m tests.support.longest_first JUNIT.xml (from the checkout's root)
    DURATIONS.write_text(json.dumps(per_file(Path(sys.argv[1])), indent=0) + "\n", encoding="utf-8")
