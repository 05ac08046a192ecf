"""Benchmark: files per minute for a one-attribute change (every wall's Description) on generated sample
models, with `nexus batch` at 1, 2 and 4 workers (embedded pool, and on a Redis queue when `--redis URL` is
given), side by side with a plain shell-style loop calling `nexus run` per file (a scripted model playing the
same automation).

    python bench/bench_batch.py [--files 100] [--workers 1 2 4] [--storeys 1] [--redis redis://...] [--keep DIR]

Every figure includes, per file, the IFC host's start (a Python interpreter and IfcOpenShell) and its stop.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ifc_host.sample import write_sample_model  # noqa: E402

SCRIPT = 'for wall in model.by_type("IfcWall"):\n    wall.Description = "bench: reviewed"\n'


def nexus(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cloud.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def batch(work: Path, workers: int, redis: str | None) -> tuple[float, int]:
    out = work / f"out-{'queue' if redis else 'pool'}-{workers}"
    shutil.rmtree(out, ignore_errors=True)  # a batch already done would be skipped, not measured
    args = ["batch", "--ifc", str(work / "in" / "*.ifc"), "--script", str(work / "s.py"), "--out", str(out),
            "--json", "--db", str(work / "bench.db")]
    worker_processes = []
    if redis:
        args += ["--redis", redis, "--workers", "0"]
        worker_processes = [subprocess.Popen([sys.executable, "-m", "cloud.cli", "batch-worker", "--redis", redis,
                                              "--db", str(work / f"w{i}.db")], stderr=subprocess.DEVNULL)
                            for i in range(workers)]
    else:
        args += ["--workers", str(workers)]
    started = time.perf_counter()
    done = nexus(*args)
    seconds = time.perf_counter() - started
    for process in worker_processes:
        process.terminate()
        process.wait(60)
    summary = json.loads(done.stdout.splitlines()[-1])
    return seconds, summary["committed"]


def plain_loop(work: Path, files: list[Path]) -> tuple[float, int]:
    play = work / "play.json"
    play.write_text(json.dumps({"turns": [
        [{"tool_call": {"name": "execute_task_automation", "input": {"code": SCRIPT}}}], [{"text": "Done."}]]}))
    out = work / "out-loop"
    out.mkdir(exist_ok=True)
    started, committed = time.perf_counter(), 0
    for path in files:
        done = nexus("run", "Mark every wall", "--ifc", str(path), "--model", f"scripted:{play}",
                     "--out", str(out / path.name), "--db", str(work / "loop.db"))
        committed += done.returncode == 0 and (out / path.name).exists()
    return time.perf_counter() - started, committed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--storeys", type=int, default=1)
    parser.add_argument("--redis", help="also measure the Redis queue with as many batch-workers")
    parser.add_argument("--skip-loop", action="store_true", help="leave out the nexus run loop")
    parser.add_argument("--keep", help="work in this folder (kept) instead of a temporary one")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="nexus-bench-batch-"))
    files = [work / "in" / f"model_{i:03d}.ifc" for i in range(args.files)]
    for i, path in enumerate(files):
        if not path.exists():
            write_sample_model(path, storeys=args.storeys, seed=i)
    (work / "s.py").write_text(SCRIPT)
    print(f"{args.files} sample models ({args.storeys} storey(s)), {os.cpu_count()} cores; one attribute on every wall")
    print(f"{'how':<34}{'seconds':>10}{'files/min':>12}{'committed':>11}")
    if not args.skip_loop:
        seconds, committed = plain_loop(work, files)
        print(f"{'nexus run loop (1 at a time)':<34}{seconds:>10.1f}{args.files * 60 / seconds:>12.1f}{committed:>11}",
              flush=True)
    for workers in args.workers:
        for redis in [None, args.redis] if args.redis else [None]:
            seconds, committed = batch(work, workers, redis)
            name = f"nexus batch, {'queue' if redis else 'pool'}, {workers} worker(s)"
            print(f"{name:<34}{seconds:>10.1f}{args.files * 60 / seconds:>12.1f}{committed:>11}", flush=True)


if __name__ == "__main__":
    main()
