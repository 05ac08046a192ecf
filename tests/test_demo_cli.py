"""`nexus demo` (issue 22, item 8): each demo works on its own copy of the sample, serves a batch root of
sample models (so "Apply to other models…" has models to apply to), and revokes its tokens when it stops."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

from cloud.store import Store
from tests.support.processes import free_port, read_until, stop

REPO_ROOT = Path(__file__).resolve().parents[1]


def _start(tmp_path: Path, db: Path, ignoring_sigint: bool = False) -> subprocess.Popen[str]:
    """`ignoring_sigint`: started as a non-interactive shell starts a background job, with SIGINT ignored (which a
    process inherits); Ctrl-C / SIGINT must stop the demo all the same."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "NEXUS_BATCH_ROOT")}
    env.update(PYTHONPATH=str(REPO_ROOT), XDG_DATA_HOME=str(tmp_path / "data"))
    return subprocess.Popen([sys.executable, "-m", "cloud.cli", "demo", "--port", str(free_port()), "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path,
                            preexec_fn=_ignore_sigint if ignoring_sigint else None)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _ready(demo: subprocess.Popen[str]) -> dict[str, str]:
    url = read_until(demo, r"Open the chat:\s+(http://[^/]+)/", 240).group(1)
    model = read_until(demo, r"Model file:\s+(\S+)", 10).group(1)
    root = read_until(demo, r"Batch root:\s+(\S+)", 10).group(1)
    return {"url": url, "model": model, "root": root}


def test_two_demos_keep_their_own_files_serve_a_batch_root_and_revoke_their_tokens_on_stop(tmp_path):
    db = tmp_path / "demo.db"
    first, second = _start(tmp_path, db), _start(tmp_path, db, ignoring_sigint=True)
    try:
        one, two = _ready(first), _ready(second)
        assert one["model"] != two["model"] and one["root"] != two["root"]  # no fight over one file
        assert Path(one["model"]).is_file() and Path(two["model"]).is_file()
        root = Path(one["root"])
        per_user = sorted(p.name for p in (root / "demo" / "models").glob("*.ifc"))
        assert len(per_user) >= 3
        assert sorted(p.name for p in (root / "models").glob("*.ifc")) == per_user  # the root used directly too
        assert all(Path(os.path.realpath(p)).is_relative_to(root / "demo") for p in (root / "models").glob("*.ifc"))

        store = Store(db)
        demo_tokens = {t["id"] for t in store.list_tokens()}
        assert len(demo_tokens) == 4  # a person's and a host's token per demo
        token = store.create_token("demo")
        # "Apply to other models…": a batch over the sample models is accepted (no 503: the root is served).
        started = requests.post(one["url"] + "/api/batches", json={"files": "models/*.ifc", "out": "out/checked",
                                                                   "script": "print(len(model.by_type('IfcDoor')))"},
                                headers={"Authorization": f"Bearer {token}", "X-Requested-With": "nexus"},
                                timeout=60)
        assert started.status_code in (200, 201, 202), started.text
        assert started.json()["files"] == len(per_user)
        batch_id = started.json()["batch_id"]
        deadline, rows = time.monotonic() + 180, []
        while time.monotonic() < deadline:
            rows = requests.get(f"{one['url']}/api/batches/{batch_id}", headers={"Authorization": f"Bearer {token}"},
                                timeout=30).json()["file_results"]
            if rows and all(r["state"] not in ("queued", "running") for r in rows):
                break
            time.sleep(0.5)
        assert [r["ok"] for r in rows] == [True] * len(per_user), rows  # the script ran on every sample model
        store.revoke_token(store.token_id(token) or "")

        stop(first, signal.SIGTERM, timeout_s=20)  # a demo stops in a few seconds, a busy machine included
        stop(second, signal.SIGINT, timeout_s=20)
        assert first.returncode == 0 and second.returncode == 0
        revoked = {t["id"]: t["revoked"] for t in store.list_tokens()}
        assert all(revoked[i] is not None for i in demo_tokens), revoked
        assert not Path(one["model"]).exists() and not Path(two["model"]).exists()  # their folders are gone
    finally:
        for demo in (first, second):
            if demo.poll() is None:
                stop(demo)
