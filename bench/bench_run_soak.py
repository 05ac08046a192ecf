"""Soak: many `nexus run --json` runs with stdout on a pipe, a few at a time; counts the crashes (issue 22).

Each run is a real `nexus run` (orchestrator, IFC host child over the loopback websocket, the API index built
on a thread when the host connects) on a sample model with a scripted model: a data collection, an
automation, a last message. The bench reads each run's stdout through a pipe, as a CI job or an MCP client
would. A crash is a run killed by a signal (a negative return code: -11 is SIGSEGV); a polluted line is one
on stdout that is not JSON.

    .venv/bin/python bench/bench_run_soak.py                      # 300 runs, 3 at a time, this checkout
    .venv/bin/python bench/bench_run_soak.py --runs 60 --old /tmp/old-checkout

`--old DIR` runs the same soak on another checkout of the project first (e.g. `git archive main | tar -x -C
DIR`), with the same interpreter and packages, and prints both side by side. The floor is 0 crashes.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCRIPT = {"turns": [
    [{"text": "Counting the doors."},
     {"tool_call": {"name": "execute_data_collection", "input": {"code": (
         "doors = model.by_type('IfcDoor')\nfor d in doors:\n    print(d.Tag, d.Name)\nprint(len(doors))\n")}}}],
    [{"text": "Renaming the first door."},
     {"tool_call": {"name": "execute_task_automation", "input": {"code": (
         "door = sorted(model.by_type('IfcDoor'), key=lambda d: d.id())[0]\ndoor.Name = 'SOAK'\n")}}}],
    [{"text": "Done: the first door is now called SOAK."}],
]}


@dataclass
class Soak:
    label: str
    codes: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    polluted: int = 0
    incomplete: int = 0
    first_crash: str = ""

    @property
    def crashes(self) -> int:
        return sum(1 for c in self.codes if c < 0)

    @property
    def failures(self) -> int:
        return sum(1 for c in self.codes if c > 0)


def one_run(index: int, work: Path, model: Path, spec: str, pythonpath: str | None, soak: Soak) -> None:
    env = {**os.environ, "NEXUS_SCRIPTED_DIRS": ""}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = work / f"out-{index}.ifc"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "cloud.cli", "run", "Rename the first door", "--ifc", str(model), "--model", spec,
         "--json", "--out", str(out), "--db", str(work / f"run-{index}.db")],
        capture_output=True, text=True, cwd=work, env=env, timeout=600)
    soak.seconds.append(time.monotonic() - started)
    soak.codes.append(done.returncode)
    lines = done.stdout.splitlines()
    for line in lines:
        try:
            json.loads(line)
        except ValueError:
            soak.polluted += 1
    if not lines or '"type": "Complete"' not in lines[-1]:
        soak.incomplete += 1
    if done.returncode < 0 and not soak.first_crash:
        soak.first_crash = done.stderr[-1500:]
    out.unlink(missing_ok=True)
    (work / f"run-{index}.db").unlink(missing_ok=True)


def soak(label: str, runs: int, parallel: int, pythonpath: str | None) -> Soak:
    from ifc_host.sample import write_sample_model

    result = Soak(label)
    with tempfile.TemporaryDirectory(prefix="nexus-soak-") as folder:
        work = Path(folder)
        model = work / "sample.ifc"
        write_sample_model(model, storeys=1)
        script = work / "soak.json"
        script.write_text(json.dumps(SCRIPT))
        spec = f"scripted:{script}"
        started = time.monotonic()
        with ThreadPoolExecutor(parallel) as pool:
            for future in [pool.submit(one_run, i, work, model, spec, pythonpath, result) for i in range(runs)]:
                future.result()
        print(f"  {label}: {runs} runs in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--parallel", type=int, default=3)
    parser.add_argument("--old", metavar="DIR", help="another checkout to soak first, for comparison")
    args = parser.parse_args()
    results = []
    if args.old:
        results.append(soak(f"old ({args.old})", args.runs, args.parallel, str(Path(args.old).resolve())))
    results.append(soak("this checkout", args.runs, args.parallel, None))
    print(f"\nnexus run --json, stdout on a pipe, {args.runs} runs, {args.parallel} at a time (floor: 0 crashes)")
    print(f"{'code':<40} {'runs':>5} {'crashes':>8} {'failed':>7} {'no Complete':>12} {'non-JSON lines':>15} "
          f"{'p50 s':>7} {'p99 s':>7}")
    for r in results:
        ordered = sorted(r.seconds)
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        print(f"{r.label:<40} {len(r.codes):>5} {r.crashes:>8} {r.failures:>7} {r.incomplete:>12} {r.polluted:>15} "
              f"{statistics.median(ordered):>7.1f} {p99:>7.1f}")
    for r in results:
        if r.crashes:
            signals = sorted({-c for c in r.codes if c < 0})
            print(f"\n{r.label}: killed by signal(s) {signals}; the first crash's stderr ends:\n{r.first_crash}")
    return 0 if results[-1].crashes == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
