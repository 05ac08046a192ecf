"""Issue 14 item 5: `nexus serve --workers N` runs gunicorn's gevent workers that meet through Redis."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import requests

from cloud.store import Store
from tests.scale.servers import free_port
from tests.support.client import Client, write_script
from tests.support.spine import say


def _serve(*args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cloud.cli", "serve", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_several_workers_need_redis(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NEXUS_REDIS_URL"}
    process = _serve("--db", str(tmp_path / "n.db"), "--workers", "2", env=env)
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 2 and "NEXUS_REDIS_URL" in out


@pytest.fixture
def workers(tmp_path, redis, database_url, scripts_dir) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "NEXUS_REDIS_URL": redis.url, "NEXUS_DATABASE_URL": database_url}
    process = _serve("--port", str(port), "--workers", "3", env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(url + "/api/me", timeout=2)
                break
            except requests.RequestException:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"nexus serve --workers did not start: {process.stdout.read()}") from None
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(30)


def test_a_run_on_one_worker_is_replayed_whole_by_every_worker(workers, database_url, scripts_dir):
    client = Client(workers, Store(database_url).create_token("alice"))
    spec = write_script(scripts_dir / "w.json", [say("Hello from one of the workers.")])
    session_id = client.new_session(None, spec)
    stream = client.run(session_id, "hi")
    assert stream.last == {"type": "Complete", "content": "Hello from one of the workers."}
    # Each request may land on any worker (no stickiness): every one replays the same stream.
    for _ in range(12):
        replay = client.call("GET", f"/api/sessions/{session_id}/stream?after=0", headers={"Connection": "close"})
        assert replay.status_code == 200 and replay.text.count("event: ") == len(stream.chunks)
    assert client.call("GET", "/api/runs").json() == {"runs": []}
