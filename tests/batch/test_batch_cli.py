"""The batch command's terminal output: a queue with no worker says what it waits for, without credentials."""
from __future__ import annotations

import subprocess
import sys
import time

from cloud.cli.batch import shown_url
from tests.batch.support import SCRIPT, make_models


def test_queue_addresses_are_shown_without_credentials():
    assert shown_url("redis://:s3cret@queue.example:6379/0") == "redis://queue.example:6379/0"
    assert shown_url("rediss://user:pw@10.0.0.5/2") == "rediss://10.0.0.5/2"
    assert shown_url("redis://127.0.0.1:6399/0") == "redis://127.0.0.1:6399/0"


def test_a_batch_on_a_queue_without_workers_says_it_waits_for_one(tmp_path, redis_server):
    files = make_models(tmp_path / "in", generated=1, corpus=False)
    (tmp_path / "s.py").write_text(SCRIPT)
    batch = subprocess.Popen([sys.executable, "-m", "cloud.cli", "batch", "--ifc", str(files["good"][0]),
                              "--script", str(tmp_path / "s.py"), "--out", str(tmp_path / "out"),
                              "--redis", redis_server.url], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             text=True)
    lines = []
    try:
        deadline = time.monotonic() + 120
        assert batch.stderr is not None
        while time.monotonic() < deadline:
            line = batch.stderr.readline()
            lines.append(line)
            if "waiting for a `nexus batch-worker`" in line or not line:
                break
    finally:
        batch.terminate()
        batch.wait(30)
    assert any(f"waiting for a `nexus batch-worker` on {redis_server.url}" in line for line in lines), lines
    assert any("left 1 of 1" in line for line in lines)
    assert not (tmp_path / "out" / files["good"][0].name).exists()
