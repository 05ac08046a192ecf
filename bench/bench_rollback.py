"""Rollback and commit at size, and under repeated commits on one host (issue 29, items 2 and 3). Run by hand.

    python bench/bench_rollback.py                                   # samples of ~4k, ~82k, ~345k entities
    python bench/bench_rollback.py --file .cache/ifc-mcp/BasicHouse.ifc --commits 20 --only-files

For every model: the rollback median (a script that renames one wall, then raises: the keeper discards its
process), the commit of a one-attribute change against its floor measured in the same run (`to_string` +
write + fsync + rename of the same change in this process), and the reply's own `commit_ms`. On the last
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_ifc_host import floor_of  # noqa: E402

from ifc_host.executor import IsolatedExecutor, execute_command  # noqa: E402
from ifc_host.isolation import ISOLATIONS  # noqa: E402
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


def floor_and_facts(path: Path, scratch: Path) -> tuple[float, int, int]:
    """The commit floor (median of 2) of a one-attribute change, the entity count and a wall's id."""
    model = open_checked(path)
    wall = model.by_type("IfcWall")[0]
    wall.Name = "floor"
    return floor_of(model, scratch / ("floor-" + path.name), rounds=2), len(model.entity_names()), wall.id()


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
    return elapsed, float(result.get("commit_ms") or 0), str(result.get("model_read"))


def bench(path: Path, isolation: str, rounds: int, commits: int, series: bool) -> None:
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        floor, entities, wall_id = floor_and_facts(path, scratch)
        work = scratch / path.name
        work.write_bytes(path.read_bytes())
        executor = IsolatedExecutor(work, isolation=isolation)
        try:
            executor.wait_warm()
            rollback_ms(executor, wall_id, 2, "warm")
            first = rollback_ms(executor, wall_id, rounds, "r")
            rss = rss_mb(executor.keeper_pid)
            wall, inside, how = commit_ms(executor, wall_id, 0)
            print(f"  {path.name[:26]:26} {isolation:5} {entities:>9,} {work.stat().st_size / 1e6:>7.1f}"
                  f" {first:>11.1f} {wall:>10.0f} {inside:>10.0f} {floor:>9.0f} {wall / floor:>7.2f}"
                  f" {inside / floor:>7.2f} {rss:>7.0f}  {how}", flush=True)
            if not series:
                return
            print(f"\n  on {path.name} ({entities:,} entities), after each commit (floor {floor:.0f} ms):")
            print(f"  {'commits':>7} {'rollback ms':>11} {'keeper RSS MB':>13} {'keeper pid':>10}"
                  f" {'commit ms':>10} {'in keeper':>10} {'x floor':>7} {'handover s':>10}")
            print(f"  {0:>7} {first:>11.1f} {rss:>13.0f} {executor.keeper_pid:>10}")
            handover = executor.wait_warm()
            print(f"  {1:>7} {rollback_ms(executor, wall_id, rounds, 's1'):>11.1f} {rss_mb(executor.keeper_pid):>13.0f}"
                  f" {executor.keeper_pid:>10} {wall:>10.0f} {inside:>10.0f} {wall / floor:>7.2f} {handover:>10.1f}",
                  flush=True)
            for n in range(1, commits):
                wall, inside, _ = commit_ms(executor, wall_id, n)
                handover = executor.wait_warm()
                roll = rollback_ms(executor, wall_id, rounds, f"s{n + 1}")
                print(f"  {n + 1:>7} {roll:>11.1f} {rss_mb(executor.keeper_pid):>13.0f} {executor.keeper_pid:>10}"
                      f" {wall:>10.0f} {inside:>10.0f} {wall / floor:>7.2f} {handover:>10.1f}", flush=True)
            print(f"  handovers: {executor.handovers}; the committed file holds commit {commits - 1}:"
                  f" {f'commit {commits - 1}'.encode() in work.read_bytes()}")
        finally:
            executor.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", action="append", default=[], help="a real IFC file, read by path (repeatable)")
    parser.add_argument("--only-files", action="store_true", help="skip the samples")
    parser.add_argument("--commits", type=int, default=5, help="commits in the series on the last model")
    parser.add_argument("--rounds", type=int, default=5, help="rollbacks per median")
    parser.add_argument("--isolation", choices=ISOLATIONS, default="fork")
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "nexus-bench-ifc"))
    args = parser.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    paths = [] if args.only_files else [sample(cache, name) for name in SAMPLES]
    paths += [Path(p) for p in args.file]
    print(f"load average at the start: {'/'.join(f'{x:.1f}' for x in os.getloadavg())} (2 cores)")
    print("rollback: a script renames one wall, then raises (median, wall-clock from the host's side); commit: a"
          "\none-attribute change, wall-clock and the keeper's commit_ms; floor: to_string + write + fsync + rename"
          "\nof the same change in this process, in this run; RSS: the keeper's before the first commit")
    print(f"  {'file':26} {'isol':5} {'entities':>9} {'MB':>7} {'rollback ms':>11} {'commit ms':>10}"
          f" {'in keeper':>10} {'floor ms':>9} {'x floor':>7} {'keeper x':>7} {'RSS MB':>7}  model read as")
    for index, path in enumerate(paths):
        bench(path, args.isolation, args.rounds, args.commits, series=index == len(paths) - 1)
    print(f"load average at the end: {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
