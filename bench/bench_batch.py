"""Benchmark: files per minute for a one-attribute change (every wall's Description) on generated sample
models, with `nexus batch` at 1, 2 and 4 workers (embedded pool, and on a Redis queue when `--redis URL` is
given), side by side with a plain shell-style loop calling `nexus run` per file (a scripted model playing the
same automation). With `--skill`, the same script saved as a team skill is also run with
`nexus batch --skill` (sha256 checked and one run counted per file) at each worker count.

    python bench/bench_batch.py [--files 100] [--workers 1 2 4] [--storeys 1] [--redis redis://...] [--skill]
                                [--keep DIR]

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

SCRIPT = 'MARK = "bench: reviewed"\nfor wall in model.by_type("IfcWall"):\n    wall.Description = MARK\n'
SKILL = "Bench wall mark"


def nexus(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cloud.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def save_skill(work: Path) -> None:
    """The benchmark's script as a skill of the default (`cli`) user's team library in bench.db."""
    from cloud.skills.library import SkillLibrary
    from cloud.skills.parameters import confirm_parameters
    from cloud.store import Store

    library = SkillLibrary(Store(str(work / "bench.db")))
    if library.get("cli", SKILL) is None:
        library.save(user_name="cli", name=SKILL, description="Marks every wall's Description", host_app="ifc",
                     code=SCRIPT, parameters=confirm_parameters(SCRIPT, ["MARK"]), capability_version="bench",
                     provenance={"bench": True}, example={})


def batch(work: Path, workers: int, redis: str | None, skill: bool = False) -> tuple[float, int]:
    out = work / f"out-{'queue' if redis else 'pool'}-{workers}{'-skill' if skill else ''}"
    shutil.rmtree(out, ignore_errors=True)  # a batch already done would be skipped, not measured
    task = ["--skill", SKILL, "--arg", "MARK=bench: skill"] if skill else ["--script", str(work / "s.py")]
    args = ["batch", "--ifc", str(work / "in" / "*.ifc"), *task, "--out", str(out),
            "--json", "--db", str(work / "bench.db")]
    worker_processes = []
    if redis:
        args += ["--redis", redis, "--workers", "0"]
        worker_processes = [subprocess.Popen([sys.executable, "-m", "cloud.cli", "batch-worker", "--redis", redis,
                                              "--db", str(work / ("bench.db" if skill else f"w{i}.db"))],
                                             stderr=subprocess.DEVNULL)
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
    parser.add_argument("--skill", action="store_true", help="also measure nexus batch --skill (the same script)")
    parser.add_argument("--keep", help="work in this folder (kept) instead of a temporary one")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="nexus-bench-batch-"))
    files = [work / "in" / f"model_{i:03d}.ifc" for i in range(args.files)]
    for i, path in enumerate(files):
        if not path.exists():
            write_sample_model(path, storeys=args.storeys, seed=i)
    (work / "s.py").write_text(SCRIPT)
    if args.skill:
        save_skill(work)
    print(f"{args.files} sample models ({args.storeys} storey(s)), {os.cpu_count()} cores; one attribute on every wall")
    print(f"{'how':<42}{'seconds':>10}{'files/min':>12}{'committed':>11}")
    if not args.skip_loop:
        seconds, committed = plain_loop(work, files)
        print(f"{'nexus run loop (1 at a time)':<42}{seconds:>10.1f}{args.files * 60 / seconds:>12.1f}{committed:>11}",
              flush=True)
    for workers in args.workers:
        for redis in [None, args.redis] if args.redis else [None]:
            for skill in (False, True) if args.skill else (False,):
                seconds, committed = batch(work, workers, redis, skill)
                name = f"nexus batch{' --skill' if skill else ''}, {'queue' if redis else 'pool'}, {workers} worker(s)"
                print(f"{name:<42}{seconds:>10.1f}{args.files * 60 / seconds:>12.1f}{committed:>11}", flush=True)


if __name__ == "__main__":
    main()
