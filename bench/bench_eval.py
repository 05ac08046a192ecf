"""Benchmark of `nexus eval` (issue 17). Run by hand; prints figures, asserts nothing.

    harness overhead   per task run with a scripted model, the time outside the loop and the IFC host:
                       copying the model, the store, opening the files before and after, the checker,
                       bookkeeping (total - loop - host start/stop), and the host's start and stop beside it
    whole suite        wall time of the shipped suite's reference solutions at --parallel 1 and 2

    python bench/bench_eval.py            # overhead on 6 tasks, then the whole suite at 1 and 2
    python bench/bench_eval.py --quick    # overhead only
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cloud.evaluation.runner import run_all  # noqa: E402
from cloud.evaluation.tasks import load_suite  # noqa: E402

SUITE = ROOT / "evals"
SOLUTIONS = f"scripted:{SUITE / 'solutions'}"
OVERHEAD_TASKS = ("q-count-doors", "q-total-area", "a-duplicate-marks", "e-renumber-level-1", "e-pset-offices",
                  "e-create-wall-with-door")


def overhead() -> None:
    tasks = [t for t in load_suite(SUITE).tasks if t.id in OVERHEAD_TASKS]
    results = run_all(tasks, [SOLUTIONS])
    print(f"{'task':28} {'total':>7} {'loop':>7} {'host':>7} {'check':>7} {'harness':>8}")
    harness = []
    for r in results:
        rest = r.seconds - r.loop_seconds - r.host_seconds
        harness.append(rest)
        print(f"{r.task:28} {r.seconds:7.2f} {r.loop_seconds:7.2f} {r.host_seconds:7.2f} {r.check_seconds:7.2f} "
              f"{rest:8.2f}   {r.status}")
    print(f"harness overhead per task (outside loop and host): median {statistics.median(harness):.2f} s "
          f"(of which checking {statistics.median(r.check_seconds for r in results):.2f} s); host start+stop "
          f"median {statistics.median(r.host_seconds for r in results):.2f} s")


def whole_suite() -> None:
    suite = load_suite(SUITE)
    for parallel in (1, 2):
        started = time.perf_counter()
        results = run_all(suite.tasks, [SOLUTIONS], parallel=parallel)
        wall = time.perf_counter() - started
        passed = sum(r.passed for r in results)
        print(f"whole suite, --parallel {parallel}: {len(results)} tasks ({passed} passed) in {wall:.1f} s wall, "
              f"{wall / len(results):.2f} s per task")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    overhead()
    if not args.quick:
        whole_suite()


if __name__ == "__main__":
    main()
