"""CPU of test files (pytest and every process it reaped: hosts, `nexus` commands, servers, browsers), this
checkout against a peer checkout of another commit, taking turns file by file so both see the same load.

    python bench/bench_test_cpu.py --peer ../base-checkout tests/batch/test_batch_ids.py tests/batch/test_batch_queue.py

Each checkout runs with its own interpreter (`.venv/bin/python` there, else this one), one file at a time, without
xdist. CPU, not wall time: other work on the machine slows the wall clock, not the CPU a file needs. The load
average is printed with every figure."""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _python(checkout: Path) -> str:
    venv = checkout / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def cpu_of(checkout: Path, test_file: str) -> tuple[float, bool]:
    """User+system seconds of `pytest test_file` in `checkout`, and whether it passed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([_python(checkout), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           test_file], cwd=checkout, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", required=True, help="the other checkout (e.g. a worktree of main)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    peer = Path(args.peer).resolve()
    totals = {"peer": 0.0, "this": 0.0}
    print(f"{'file':60} {'peer s':>8} {'this s':>8}  load")
    for round_ in range(args.rounds):
        for index, test_file in enumerate(args.files):
            order = [("peer", peer), ("this", ROOT)]
            if (index + round_) % 2:
                order.reverse()
            figures: dict[str, str] = {}
            for name, checkout in order:
                seconds, passed = cpu_of(checkout, test_file)
                totals[name] += seconds
                figures[name] = f"{seconds:8.1f}" + ("" if passed else "!")
            load = os.getloadavg()[0]
            print(f"{test_file:60} {figures['peer']:>8} {figures['this']:>8}  {load:.1f}", flush=True)
    change = 100 * (totals["this"] / totals["peer"] - 1) if totals["peer"] else 0.0
    print(f"{'total (! = failed)':60} {totals['peer']:8.1f} {totals['this']:8.1f}  {change:+.0f}% CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
