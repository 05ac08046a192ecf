"""Issue 23, M5 for the batch queue: a job message on the Redis queue carries a signature (NEXUS_SECRET) over
its batch folder and file; a worker drops and logs one this deployment did not enqueue (written straight
to the queue by someone with Redis access), and never opens the folder it names."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from cloud.batch.queue import ACTOR, NAMESPACE, QUEUE


def test_a_job_written_to_the_queue_by_someone_else_is_dropped(tmp_path, redis_server):
    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log:
        worker = subprocess.Popen([sys.executable, "-m", "cloud.cli", "batch-worker", "--redis", redis_server.url,
                                   "--workers", "1", "--db", str(tmp_path / "w.db")], stdout=log, stderr=log,
                                  env=dict(os.environ))
    try:
        folder = tmp_path / "planted"
        folder.mkdir()
        (folder / "manifest.json").write_text(json.dumps({"planted": True}))
        broker = RedisBroker(url=redis_server.url, namespace=NAMESPACE)
        forged = dramatiq.actor(lambda *args: None, broker=broker, actor_name=ACTOR, queue_name=QUEUE)
        forged.send(str(folder), str(folder / "victim.ifc"))  # unsigned, as the old messages were
        forged.send(str(folder), str(folder / "victim.ifc"), "s1.0.feed.forged")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and log_path.read_text(errors="replace").count("dropped a job") < 2:
            time.sleep(0.2)
        text = log_path.read_text(errors="replace")
        assert text.count("dropped a job") == 2 and "not enqueued by this deployment" in text, text
        assert "Traceback" not in text, text  # dropped, not a crash of the job
        assert sorted(p.name for p in folder.iterdir()) == ["manifest.json"]  # nothing was written there
        broker.close()
    finally:
        worker.terminate()
        worker.wait(30)


def test_a_worker_without_the_secret_refuses_to_start_in_one_line(tmp_path, redis_server):
    env = {k: v for k, v in os.environ.items() if k != "NEXUS_SECRET"}
    done = subprocess.run([sys.executable, "-m", "cloud.cli", "batch-worker", "--redis", redis_server.url,
                           "--db", str(tmp_path / "w.db")], capture_output=True, text=True, env=env, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0, done.stderr
    assert "NEXUS_SECRET" in done.stderr, done.stderr
