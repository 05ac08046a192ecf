"""`nexus batch` on the real queue (Dramatiq on a Redis started here) with two `nexus batch-worker`s; one is
killed with SIGKILL mid-batch: its jobs finish on the other, every file gets exactly the intended change,
and no file is processed twice into a different result."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import redis

from cloud.batch.queue import running_key
from tests.batch.support import SCRIPT, assert_exactly_the_change, json_lines, make_models, sha
from tests.support.processes import child_pids

HEARTBEAT_S = "3"


def _worker(tmp_path: Path, url: str, name: str) -> subprocess.Popen[bytes]:
    log = (tmp_path / f"{name}.log").open("wb")
    return subprocess.Popen([sys.executable, "-m", "cloud.cli", "batch-worker", "--redis", url, "--workers", "1",
                             "--db", str(tmp_path / f"{name}.db")], stdout=log, stderr=log,
                            env={**os.environ, "NEXUS_BATCH_HEARTBEAT_S": HEARTBEAT_S})


def test_two_workers_one_killed_mid_batch(tmp_path, redis_server):
    files = make_models(tmp_path / "in", generated=4, corpus=False)
    inputs = {p.name: sha(p) for p in files["good"] + files["bad"]}
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    workers = {"a": _worker(tmp_path, redis_server.url, "a"), "b": _worker(tmp_path, redis_server.url, "b")}
    orphans: list[int] = []
    batch = subprocess.Popen([sys.executable, "-m", "cloud.cli", "batch", "--ifc", str(tmp_path / "in" / "*.ifc"),
                              "--script", str(script), "--out", str(out), "--redis", redis_server.url,
                              "--workers", "0", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        client = redis.Redis.from_url(redis_server.url)
        victim_name = f":{workers['a'].pid}"
        deadline = time.monotonic() + 180
        victim_file = None
        while victim_file is None and time.monotonic() < deadline:
            for key in client.keys(running_key("*")):
                for path, owner in client.hgetall(key).items():
                    if owner.decode().endswith(victim_name) and Path(path.decode()) in files["good"]:
                        victim_file = path.decode()
            time.sleep(0.05)
        assert victim_file, "worker a never took a job"
        time.sleep(1.0)  # mid-job: its host is up and working
        hosts = child_pids(workers["a"].pid)
        workers["a"].send_signal(signal.SIGKILL)
        workers["a"].wait()
        for host in hosts:  # the lost machine's host processes go with it
            try:
                os.killpg(host, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                orphans.append(host)
        stdout, stderr = batch.communicate(timeout=400)
    finally:
        if batch.poll() is None:
            batch.kill()
        for process in workers.values():
            if process.poll() is None:
                process.terminate()
                process.wait(30)
    assert batch.returncode == 1, stderr
    per_file, summary = json_lines(stdout)
    assert summary["failed"] == 2 and summary["committed"] == len(files["good"]), (summary, stderr)
    victim = Path(victim_file).name
    assert per_file[victim]["ok"] and per_file[victim]["committed"], per_file[victim]
    results = out / ".nexus-batch" / "results"
    assert json.loads((results / f"{victim}.json").read_text())["worker"].endswith(f":{workers['b'].pid}")
    for path in files["good"]:
        result = json.loads((results / f"{path.name}.json").read_text())
        assert result["output_sha256"] == sha(out / path.name), f"{path.name}: the output is not the recorded one"
        assert_exactly_the_change(path, out / path.name)
    for path in files["bad"]:
        assert not (out / path.name).exists()
    assert {p.name: sha(p) for p in files["good"] + files["bad"]} == inputs
    assert not list(out.glob("*.partial")) or all(p.name.startswith(victim) for p in out.glob("*.partial"))
    # a second run on the queue redoes nothing: every result stays as it was
    before = {p.name: p.read_text() for p in results.iterdir()}
    worker = _worker(tmp_path, redis_server.url, "c")
    try:
        again = subprocess.run([sys.executable, "-m", "cloud.cli", "batch", "--resume", str(out), "--redis",
                                redis_server.url, "--workers", "0", "--json"], capture_output=True, text=True,
                               timeout=300)
    finally:
        worker.terminate()
        worker.wait(30)
    assert json_lines(again.stdout)[1]["committed"] == len(files["good"])
    assert {p.name: p.read_text() for p in results.iterdir()} == before
