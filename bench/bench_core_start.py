"""How long the embedded core takes to start and stop, in wall time and in CPU (run by hand; prints figures).

    python bench/bench_core_start.py [--cycles 10] [--old-checkout DIR]

Each cycle starts, in a fresh interpreter, what `nexus run` starts before its first model turn: the core's shared
state and the server its IFC host connects to, then (`with host`) the IFC host on the sample building until it
is connected; and closes it. Printed side by side with the floor, an interpreter that only imports the core,
and, with `--old-checkout`, the same cycle on another checkout of the project (e.g. `git worktree add /tmp/old
93b5cfd`) run with this environment's packages.

CPU per host start, robust on a loaded machine (wall times are not): a second after the host connected, the CPU
each of its processes has used (/proc/PID/stat): the runtime (`python -m ifc_host.launcher`), the model keeper
(`python -m ifc_host.keeper`), the keeper's forked children (script spares, read server) and render servers; and,
after the core closed, everything the host's process tree used from start to stop (getrusage of the reaped
children: the host's processes are the cycle's only children). With them, whether the runtime process loaded
IfcOpenShell or numpy (its /proc/PID/maps: their native libraries).

CPU per command process: the interpreter's own up to the end of its imports, and that of the whole cycle (the
interpreter and every process it reaped); two command lines are timed alike, `nexus run --help` and `nexus check
nowhere.ifc --clash` (a bad argument). The database is made before each cycle, as an earlier command leaves it.
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
import json, os, resource, shutil, sys, time
TICK = os.sysconf("SC_CLK_TCK")

def tree(pid):
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append((int(entry), (int(fields[11]) + int(fields[12])) / TICK))
    out, todo = [], [(pid, None)]
    while todo:
        parent, _ = todo.pop()
        for child, cpu in children.get(parent, []):
            try:
                command = open(f"/proc/{child}/cmdline", "rb").read().replace(b"\0", b" ").decode()
            except OSError:
                continue
            out.append((child, parent, command, cpu))
            todo.append((child, None))
    return out

def host_cpu(launcher):
    kinds = {"runtime": 0.0, "keeper": 0.0, "keeper children": 0.0, "render": 0.0}
    with open(f"/proc/{launcher}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    kinds["runtime"] = (int(fields[11]) + int(fields[12])) / TICK
    keepers = set()
    for pid, parent, command, cpu in tree(launcher):
        if "ifc_host.render_child" in command:
            kinds["render"] += cpu
        elif "ifc_host.keeper" in command and parent == launcher:
            kinds["keeper"] += cpu
            keepers.add(pid)
        else:
            kinds["keeper children"] += cpu
    maps = open(f"/proc/{launcher}/maps").read()
    kinds["runtime loads"] = sorted(name for name in ("ifcopenshell", "numpy") if f"/{name}/" in maps)
    return kinds

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
time.sleep(1.0)  # the keeper prepares its first script processes just after its hello
cpu = host_cpu(core.host.pid)
closing = time.perf_counter()
core.close()
closed = time.perf_counter()
reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"import": imported - started, "import_cpu": import_cpu, "start": ready - opened,
                  "close": closed - closing,
                  "host cpu": reaped.ru_utime + reaped.ru_stime, **cpu,
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
        return {**json.loads(done.stdout.strip().splitlines()[-1]), "cycle cpu": cpu}


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


def cpu_summary(rows: list[dict], key: str) -> str:
    values = sorted(r[key] for r in rows)
    return f"median {statistics.median(values):6.2f} CPU-s  min {values[0]:6.2f}  max {values[-1]:6.2f}"


CPU_KINDS = ("host cpu", "runtime", "keeper", "keeper children", "render")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--old-checkout", type=Path)
    args = parser.parse_args()
    from ifc_host.sample import write_sample_model

    model = Path(tempfile.mkdtemp()) / "sample.ifc"
    write_sample_model(model)
    checkouts = [("this checkout", REPO)] + ([("old checkout", args.old_checkout)] if args.old_checkout else [])
    # Old and new cycles alternate, so both see the same load from the machine's other work.
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
    print(f"{'floor: import the core':34} import {summary(floor, 'import')}")
    print(f"{'floor: import the core, CPU':34} {cpu_summary(floor, 'import_cpu')}")
    for name, _ in checkouts:
        done = rows[name]
        print(f"{name + ': import':34} {summary(done, 'import')}")
        print(f"{name + ': import, CPU':34} {cpu_summary(done, 'import_cpu')}")
        print(f"{name + ': start (host connected)':34} {summary(done, 'start')}")
        print(f"{name + ': close':34} {summary(done, 'close')}")
        print(f"{name + ': web modules loaded':34} {done[-1]['web'] or 'none'}")
        labels = {"host cpu": "host CPU, start to stop, all", "runtime": "CPU at connect+1s: runtime",
                  "keeper": "  keeper", "keeper children": "  keeper's children", "render": "  render servers"}
        for kind in CPU_KINDS:
            print(f"{name + ': ' + labels[kind]:44} {cpu_summary(done, kind)}")
        print(f"{name + ': runtime loaded':34} {done[-1]['runtime loads'] or 'neither ifcopenshell nor numpy'}")
        print(f"{name + ': CPU of a cycle, all processes':44} {cpu_summary(done, 'cycle cpu')}")
        for shown in COMMANDS:
            print(f"{name + ': ' + shown:44} {summary(commands[(name, shown)], 'wall')}")
            print(f"{name + ': ' + shown + ', CPU':44} {cpu_summary(commands[(name, shown)], 'cpu')}")


if __name__ == "__main__":
    main()
