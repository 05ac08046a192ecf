"""POST /api/batches with NEXUS_REDIS_URL set: the server only enqueues (Dramatiq on a Redis started here), a
`nexus batch-worker` sharing the server's database does the files, and the API reports them (per-file
outcome, audit entries, the worker that did each) with progress over SSE; under `ask` the queue's results
are staged for review like the embedded pool's."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.batch.support import SCRIPT, assert_exactly_the_change, make_models, sha
from tests.batch.test_batch_api import by_file, follow, start, wait_finished
from tests.conftest import FAST
from tests.support.client import Client
from tests.support.processes import stop
from tests.support.server import running_server


def _worker(tmp_path: Path, url: str, db: Path) -> subprocess.Popen[bytes]:
    log = (tmp_path / "worker.log").open("wb")
    env = {k: v for k, v in os.environ.items() if k != "NEXUS_REDIS_URL"}
    return subprocess.Popen([sys.executable, "-m", "cloud.cli", "batch-worker", "--redis", url, "--workers", "2",
                             "--db", str(db)], stdout=log, stderr=log, env=env)


def test_the_api_on_the_real_queue_with_a_batch_worker(tmp_path, monkeypatch, redis_server, scripts_dir):
    root = tmp_path / "root" / "alice"  # alice's own folder under the batch root (cloud/folders/access.py)
    make_models(root / "models", generated=2, corpus=False)
    inputs = {p.name: sha(p) for p in (root / "models").iterdir()}
    monkeypatch.setenv("NEXUS_BATCH_ROOT", str(root.parent))
    monkeypatch.setenv("NEXUS_REDIS_URL", redis_server.url)
    with running_server(tmp_path, **FAST) as server:
        alice, bob = Client(server.url, server.token("alice")), Client(server.url, server.token("bob"))
        worker = _worker(tmp_path, redis_server.url, server.db_path)
        try:
            started = start(alice, files="models/*.ifc", script=SCRIPT, out="out")
            assert started["runner"] == "queue"
            reviewed = start(alice, files="models/gen_0*.ifc", script=SCRIPT, out="reviewed", policy="ask")
            assert bob.call("GET", f"/api/batches/{started['batch_id']}").status_code == 404
            stream = follow(alice, started["batch_id"],
                            lambda: (worker.poll(), (tmp_path / "worker.log").read_text()[-3000:]))
            assert stream.last["type"] == "BatchComplete", (worker.poll(), (tmp_path / "worker.log").read_text()[-3000:])
            assert stream.last["done"] == 2 and stream.last["failed"] == 2
            detail = alice.call("GET", f"/api/batches/{started['batch_id']}").json()
            files = by_file(detail)
            assert detail["runner"] == "queue"
            for name in ("gen_00.ifc", "gen_01.ifc"):
                assert files[name]["state"] == "committed" and files[name]["worker"].endswith(f":{worker.pid}")
                assert files[name]["audit"] and files[name]["audit"][0]["kind"] in ("model", "epilogue")
                assert_exactly_the_change(root / "models" / name, root / "out" / name)
            assert {files["failing.ifc"]["state"], files["truncated.ifc"]["state"]} == {"failed"}
            assert {p.name: sha(p) for p in (root / "models").iterdir()} == inputs

            review = wait_finished(alice, reviewed["batch_id"])
            assert [f["state"] for f in review["file_results"]] == ["staged", "staged"]
            assert not (root / "reviewed").exists() or not list((root / "reviewed").glob("*.ifc"))
            decide = f"/api/batches/{reviewed['batch_id']}/review"
            assert alice.call("POST", decide, json={"file": "models/gen_01.ifc", "decision": "keep"}).status_code == 200
            assert bob.call("POST", decide, json={"file": "models/gen_00.ifc", "decision": "keep"}).status_code == 404
            assert alice.call("POST", decide, json={"file": "models/gen_00.ifc", "decision": "discard"}).status_code == 200
            assert sorted(p.name for p in (root / "reviewed").glob("*")) == ["gen_01.ifc"]
        finally:
            stop(worker, signal.SIGTERM, 60)
        assert [b["batch_id"] for b in alice.call("GET", "/api/batches").json()["batches"]] == [
            reviewed["batch_id"], started["batch_id"]]
