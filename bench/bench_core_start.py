"""How long the embedded core takes to start and stop (run by hand; prints figures).

    python bench/bench_core_start.py [--cycles 10] [--old-checkout DIR]

Each cycle starts, in a fresh interpreter, what `nexus run` starts before its first model turn: the core's shared
state and the server its IFC host connects to, then (`with host`) the IFC host on the sample building until it
is connected; and closes it. Printed side by side with the floor, an interpreter that only imports the core,
and, with `--old-checkout`, the same cycle on another checkout of the project (e.g. `git worktree add /tmp/old
93b5cfd`) run with this environment's packages.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CYCLE = r"""
import json, shutil, sys, time
started = time.perf_counter()
from cloud.embedded import EmbeddedCore
from cloud.store import Store
imported = time.perf_counter()
if sys.argv[3] == "floor":
    print(json.dumps({"import": imported - started}))
    raise SystemExit
core = EmbeddedCore(Store(sys.argv[1] + "/nexus.db"), sys.argv[2], None, connect_timeout_s=300)
ready = time.perf_counter()
core.close()
closed = time.perf_counter()
print(json.dumps({"import": imported - started, "start": ready - imported, "close": closed - ready,
                  "web": sorted({m.split(".")[0] for m in sys.modules if m.split(".")[0] in ("flask", "flask_sock")})}))
"""


def cycle(checkout: Path, model: Path, kind: str) -> dict:
    with tempfile.TemporaryDirectory() as work:
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        done = subprocess.run([sys.executable, "-c", CYCLE, work, str(model), kind], capture_output=True, text=True,
                              env=env, cwd=checkout, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"{checkout}: {done.stderr[-2000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])


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
    floor = [cycle(REPO, model, "floor") for _ in range(args.cycles)]
    print(f"{'floor: import the core':34} import {summary(floor, 'import')}")
    for name, checkout in checkouts:
        rows = [cycle(checkout, model, "core") for _ in range(args.cycles)]
        print(f"{name + ': import':34} {summary(rows, 'import')}")
        print(f"{name + ': start (host connected)':34} {summary(rows, 'start')}")
        print(f"{name + ': close':34} {summary(rows, 'close')}")
        print(f"{name + ': web modules loaded':34} {rows[-1]['web'] or 'none'}")


if __name__ == "__main__":
    main()
