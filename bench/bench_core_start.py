"""How long the embedded core takes to start and stop, in wall time and in CPU (run by hand; prints figures).

    python bench/bench_core_start.py [--cycles 10] [--old-checkout DIR]

Each cycle starts, in a fresh interpreter, what `nexus run` starts before its first model turn: the core's shared
state and the server its IFC host connects to, then (`with host`) the IFC host on the sample building until it
is connected; and closes it. Its CPU is the interpreter's own up to the end of its imports, and that of the whole
cycle: the interpreter and every process it reaped (the IFC host, its keeper and their script processes). Two
command lines are timed alike: `nexus run --help` and `nexus check nowhere.ifc --clash` (a bad argument).
Printed side by side with the floor, an interpreter that only imports the core, and, with `--old-checkout`, the
same on another checkout of the project (e.g. `git worktree add /tmp/old 93b5cfd`) run with this environment's
packages; the checkouts take turns, cycle by cycle, so a change in the machine's load falls on both alike.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CYCLE = r"""
import json, shutil, sys, time
started = time.perf_counter()
from cloud.embedded import EmbeddedCore
from cloud.store import Store
imported = time.perf_counter()
import_cpu = time.process_time()
if sys.argv[3] == "floor":
    print(json.dumps({"import": imported - started, "import_cpu": import_cpu}))
    raise SystemExit
Store(sys.argv[1] + "/nexus.db").close()  # made by an earlier command: opened as it is, as at every later start
opened = time.perf_counter()
core = EmbeddedCore(Store(sys.argv[1] + "/nexus.db"), sys.argv[2], None, connect_timeout_s=300)
ready = time.perf_counter()
core.close()
closed = time.perf_counter()
print(json.dumps({"import": imported - started, "import_cpu": import_cpu, "start": ready - opened,
                  "close": closed - ready,
                  "web": sorted({m.split(".")[0] for m in sys.modules if m.split(".")[0] in ("flask", "flask_sock")})}))
"""
COMMANDS = {"nexus run --help": ["run", "--help"], "nexus check nowhere.ifc --clash": ["check", "nowhere.ifc", "--clash"]}


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def cycle(checkout: Path, model: Path, kind: str) -> dict:
    with tempfile.TemporaryDirectory() as work:
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        before = _children_cpu()
        done = subprocess.run([sys.executable, "-c", CYCLE, work, str(model), kind], capture_output=True, text=True,
                              env=env, cwd=checkout, timeout=600)
        cpu = _children_cpu() - before
        if done.returncode != 0:
            raise SystemExit(f"{checkout}: {done.stderr[-2000:]}")
        return {**json.loads(done.stdout.strip().splitlines()[-1]), "cpu": cpu}


def command(checkout: Path, arguments: list[str]) -> dict:
    """One `nexus ARGUMENTS` of `checkout`: its wall time and CPU (its status is not checked: a bad argument)."""
    with tempfile.TemporaryDirectory() as work:
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        before, started = _children_cpu(), time.perf_counter()
        subprocess.run([sys.executable, "-m", "cloud.cli", *arguments], capture_output=True, env=env, cwd=work,
                       timeout=600)
        return {"wall": time.perf_counter() - started, "cpu": _children_cpu() - before}


def summary(rows: list[dict], key: str) -> str:
    values = sorted(r[key] for r in rows)
    return f"median {statistics.median(values) * 1000:7.0f} ms  min {values[0] * 1000:7.0f}  max {values[-1] * 1000:7.0f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--old-checkout", type=Path)
    args = parser.parse_args()
    from ifc_host.sample import write_sample_model

    model = Path(tempfile.mkdtemp()) / "sample.ifc"
    write_sample_model(model)
    checkouts = [("this checkout", REPO)] + ([("old checkout", args.old_checkout)] if args.old_checkout else [])
    floor: list[dict] = []
    rows: dict[str, list[dict]] = {name: [] for name, _ in checkouts}
    commands: dict[tuple[str, str], list[dict]] = {(name, c): [] for name, _ in checkouts for c in COMMANDS}
    for _ in range(args.cycles):
        floor.append(cycle(REPO, model, "floor"))
        for name, checkout in checkouts:
            rows[name].append(cycle(checkout, model, "core"))
            for shown, arguments in COMMANDS.items():
                commands[(name, shown)].append(command(checkout, arguments))
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"{'floor: import the core':46} {summary(floor, 'import')}")
    print(f"{'floor: import the core, CPU':46} {summary(floor, 'import_cpu')}")
    for name, _ in checkouts:
        print(f"{name + ': import':46} {summary(rows[name], 'import')}")
        print(f"{name + ': import, CPU':46} {summary(rows[name], 'import_cpu')}")
        print(f"{name + ': start (host connected)':46} {summary(rows[name], 'start')}")
        print(f"{name + ': close':46} {summary(rows[name], 'close')}")
        print(f"{name + ': CPU of a cycle, all processes':46} {summary(rows[name], 'cpu')}")
        print(f"{name + ': web modules loaded':46} {rows[name][-1]['web'] or 'none'}")
        for shown in COMMANDS:
            print(f"{name + ': ' + shown:46} {summary(commands[(name, shown)], 'wall')}")
            print(f"{name + ': ' + shown + ', CPU':46} {summary(commands[(name, shown)], 'cpu')}")


if __name__ == "__main__":
    main()
