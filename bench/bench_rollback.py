"""Rollback and commit at size, and under repeated commits on one host (issue 29, items 2 and 3). Run by hand.

    python bench/bench_rollback.py                                   # samples of ~4k, ~82k, ~345k entities
    python bench/bench_rollback.py --sizes 82k --pairs 5 --commits 0 # one sample, five commits, no series
    python bench/bench_rollback.py --file .cache/ifc-mcp/BasicHouse.ifc --commits 20 --only-files

For every model: the rollback median (a script that renames one wall, then raises: the keeper discards its
process), then --pairs commits of a one-attribute change, each right after its floor (`to_string` + write +
fsync + rename of the same change in this process: on a shared machine the load changes from one minute to
the next, so each commit is compared with the floor measured next to it). Printed: the first commit (the
keeper that opened the file; its records were serialised ahead), the median commit of the rest (successor
keepers, each on the file its predecessor wrote, where the file is big enough to hand over: handover.py,
8 MB by default; below that, the same keeper's later commits: the row says how many handovers there were),
each against its floor, and the reply's own `commit_ms` ("in keeper": from the script's end to the reply),
and how the commit's model was had (`model_read`; "ahead": worked out while the script's process serialised
the model, trusted_report.ReportAhead). On the last
model, after each of --commits commits on the same host: the rollback median again and the keeper's RSS
(the keeper hands over to a fresh process after each commit, so both should stay flat). The files are
copied to a scratch folder first (the originals are never written) and never into the repository.
Targets: rollback <= 50 ms at 1M entities after 20 commits; commit <= 1.2x its floor at every size.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_ifc_host import floor_of  # noqa: E402

from ifc_host.executor import IsolatedExecutor, execute_command  # noqa: E402
from ifc_host.keeper_process import ISOLATIONS  # noqa: E402
from ifc_host.model_file import open_checked  # noqa: E402
from ifc_host.sample import write_sample_model  # noqa: E402

SAMPLES = {"4k": (3, 1), "82k": (10, 8), "345k": (10, 40)}


def sample(cache: Path, name: str) -> Path:
    storeys, scale = SAMPLES[name]
    path = cache / f"sample-{storeys}x{scale}.ifc"
    if not path.exists():
        write_sample_model(path, storeys=storeys, scale=scale)
    return path


def rss_mb(pid: int | None) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def model_and_facts(path: Path) -> tuple[Any, int, int]:
    """The model (to measure floors on), its entity count and a wall's id."""
    model = open_checked(path)
    wall = model.by_type("IfcWall")[0]
    return model, len(model.entity_names()), wall.id()


def floor_ms(model: Any, wall_id: int, n: int, scratch: Path) -> float:
    """One commit floor of the change commit n makes: to_string + write + fsync + rename, in this process."""
    model.by_id(wall_id).Name = f"commit {n}"
    return floor_of(model, scratch / "floor.ifc", rounds=1)


def rollback_ms(executor: IsolatedExecutor, wall_id: int, rounds: int, tag: str) -> float:
    script = f"model.by_id({wall_id}).Name = 'half done'\nraise RuntimeError('boom')\n"
    times = []
    for n in range(rounds):
        executor.wait_warm()
        started = time.perf_counter()
        result = executor.execute(execute_command(f"{tag}-{n}", "automate", script, 60))
        times.append((time.perf_counter() - started) * 1000)
        assert result["ok"] is False and result["committed"] is False, result
    return statistics.median(times)


def commit_ms(executor: IsolatedExecutor, wall_id: int, n: int) -> tuple[float, float, str]:
    executor.wait_warm()
    started = time.perf_counter()
    result = executor.execute(execute_command(f"c{n}", "automate", f"model.by_id({wall_id}).Name = 'commit {n}'", 600))
    elapsed = (time.perf_counter() - started) * 1000
    assert result["committed"] and result["ok"], result.get("error")
    how = str(result.get("model_read")) + (", ahead" if result.get("worked_out_ahead") else "")
    return elapsed, float(result.get("commit_ms") or 0), how


def bench(path: Path, isolation: str, rounds: int, commits: int, series: bool, pairs: int, settle: float) -> None:
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        model, entities, wall_id = model_and_facts(path)
        work = scratch / path.name
        work.write_bytes(path.read_bytes())
        executor = IsolatedExecutor(work, isolation=isolation)
        try:
            executor.wait_warm()
            rollback_ms(executor, wall_id, 2, "warm")
            first = rollback_ms(executor, wall_id, rounds, "r")
            rss = rss_mb(executor.keeper_pid)
            time.sleep(settle)  # the first keeper's records are serialised ahead while it is idle
            pairs_done: list[tuple[float, float, float, str]] = []  # (commit, in keeper, floor, how)
            for n in range(pairs):
                floor = floor_ms(model, wall_id, n, scratch)
                wall, inside, how = commit_ms(executor, wall_id, n)
                pairs_done.append((wall, inside, floor, how))
                executor.wait_warm()  # the successor takes over
            wall, inside, floor, how = pairs_done[0]
            rest = pairs_done[1:] or pairs_done
            ratio = statistics.median(w / f for w, _, f, _ in rest)
            print(f"  {path.name[:26]:26} {isolation:5} {entities:>9,} {work.stat().st_size / 1e6:>7.1f}"
                  f" {first:>11.1f} {wall:>7.0f} {floor:>7.0f} {wall / floor:>5.2f} {inside / floor:>5.2f}"
                  f" {statistics.median(w for w, _, _, _ in rest):>7.0f}"
                  f" {statistics.median(f for _, _, f, _ in rest):>7.0f} {ratio:>5.2f}"
                  f" {statistics.median(i / f for _, i, f, _ in rest):>5.2f} {rss:>7.0f}  {how}"
                  f" ({executor.handovers} handovers)", flush=True)
            if not series or commits < 1:
                return
            print(f"\n  on {path.name} ({entities:,} entities), {pairs} commits so far, then after each commit:")
            print(f"  {'commits':>7} {'rollback ms':>11} {'keeper RSS MB':>13} {'keeper pid':>10}"
                  f" {'commit ms':>10} {'in keeper':>10} {'floor ms':>9} {'x floor':>7} {'handover s':>10}")
            print(f"  {0:>7} {first:>11.1f} {rss:>13.0f} {'':>10}")
            last = pairs - 1
            for n in range(pairs, pairs + commits):
                floor = floor_ms(model, wall_id, n, scratch)
                wall, inside, _ = commit_ms(executor, wall_id, n)
                handover = executor.wait_warm()
                roll = rollback_ms(executor, wall_id, rounds, f"s{n}")
                print(f"  {n + 1:>7} {roll:>11.1f} {rss_mb(executor.keeper_pid):>13.0f} {executor.keeper_pid:>10}"
                      f" {wall:>10.0f} {inside:>10.0f} {floor:>9.0f} {wall / floor:>7.2f} {handover:>10.1f}", flush=True)
                last = n
            print(f"  handovers: {executor.handovers}; the committed file holds commit {last}:"
                  f" {f'commit {last}'.encode() in work.read_bytes()}")
        finally:
            executor.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", action="append", default=[], help="a real IFC file, read by path (repeatable)")
    parser.add_argument("--only-files", action="store_true", help="skip the samples")
    parser.add_argument("--sizes", default=",".join(SAMPLES), help=f"which samples ({', '.join(SAMPLES)})")
    parser.add_argument("--pairs", type=int, default=3, help="commits per model, each after its own floor")
    parser.add_argument("--settle", type=float, default=0.0,
                        help="seconds idle before the first commit (the records serialised ahead have time)")
    parser.add_argument("--commits", type=int, default=5, help="commits in the series on the last model")
    parser.add_argument("--rounds", type=int, default=5, help="rollbacks per median")
    parser.add_argument("--isolation", choices=ISOLATIONS, default="fork")
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "nexus-bench-ifc"))
    args = parser.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    sizes = [name for name in args.sizes.split(",") if name]
    unknown = [name for name in sizes if name not in SAMPLES]
    if unknown:
        parser.error(f"unknown sample size(s) {', '.join(unknown)}: choose from {', '.join(SAMPLES)}")
    paths = [] if args.only_files else [sample(cache, name) for name in sizes]
    paths += [Path(p) for p in args.file]
    print(f"load average at the start: {'/'.join(f'{x:.1f}' for x in os.getloadavg())} (2 cores)")
    print("rollback: a script renames one wall, then raises (median, wall-clock from the host's side); commit: a"
          "\none-attribute change, wall-clock (x: over the floor measured just before it; keeper x: the reply's"
          "\ncommit_ms over it); floor: to_string + write + fsync + rename of the same change in this process;"
          "\nfirst: the keeper that opened the file; then: median of the later commits (successor keepers where"
          "\nthe file is big enough to hand over, see the row's handovers); RSS: the keeper's before the first commit")
    print(f"  {'':26} {'':5} {'':>9} {'':>7} {'':>11} {'first commit':^27} {'then (median)':^27}")
    print(f"  {'file':26} {'isol':5} {'entities':>9} {'MB':>7} {'rollback ms':>11} {'commit':>7} {'floor':>7}"
          f" {'x':>5} {'kpr x':>5} {'commit':>7} {'floor':>7} {'x':>5} {'kpr x':>5} {'RSS MB':>7}  model read as")
    for index, path in enumerate(paths):
        bench(path, args.isolation, args.rounds, args.commits, index == len(paths) - 1, max(1, args.pairs),
              args.settle)
    print(f"load average at the end: {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
