"""The `nexus` command line, run as a real subprocess."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ifc_host.sample import write_sample_model
from tests.support.client import Client, write_script
from tests.support.server import running_server
from tests.support.spine import automate, collect, say


def _nexus(*args: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    command = [shutil.which("nexus")] if shutil.which("nexus") else [sys.executable, "-m", "cloud.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=Path(__file__).resolve().parents[1])


def test_token_create_prints_the_token_alone_on_the_last_line_and_it_works(tmp_path):
    db = tmp_path / "cli.db"
    plain = _nexus("token", "create", "bob", "--db", str(db))
    admin = _nexus("token", "create", "root", "--admin", env={"NEXUS_DB": str(db)})  # NEXUS_DB when no --db
    assert plain.returncode == 0 and admin.returncode == 0, plain.stderr + admin.stderr
    bob_token = plain.stdout.rstrip("\n").split("\n")[-1]
    root_token = admin.stdout.rstrip("\n").split("\n")[-1]
    assert bob_token == bob_token.strip() and " " not in bob_token and len(bob_token) > 40
    with running_server(tmp_path, db_path=db) as server:
        bob, root = Client(server.url, bob_token), Client(server.url, root_token)
        me = bob.call("GET", "/api/me").json()
        assert me["user"] == "bob" and me["is_admin"] is False
        assert bob.call("GET", "/api/admin/tokens").status_code == 403
        assert root.call("GET", "/api/me").json()["is_admin"] is True
        assert root.call("GET", "/api/admin/tokens").status_code == 200


@pytest.fixture(scope="module")
def sample_ifc(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ifc") / "sample.ifc"
    write_sample_model(path, storeys=2)
    return path


RENAME_FIRST_DOOR = "door = sorted(model.by_type('IfcDoor'), key=lambda d: d.id())[0]\ndoor.Name = 'NEXUS-CLI-TEST'\n" \
                    "print('renamed', door.id())\n"


def test_run_with_a_scripted_model_streams_json_and_saves_commits_to_out(tmp_path, sample_ifc):
    model = tmp_path / "model.ifc"
    shutil.copy(sample_ifc, model)
    before = hashlib.sha256(model.read_bytes()).hexdigest()
    spec = write_script(tmp_path / "cli.json", [
        collect("print(len(model.by_type('IfcDoor')))", "Counting doors."),
        automate(RENAME_FIRST_DOOR),
        say("Renamed the first door."),
    ])
    out = tmp_path / "out.ifc"
    done = _nexus("run", "Rename the first door", "--ifc", str(model), "--model", spec, "--json", "--out", str(out),
                  "--db", str(tmp_path / "run.db"), env={"NEXUS_SCRIPTED_DIRS": ""})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    chunks = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert chunks[-1] == {"type": "Complete", "content": "Renamed the first door."}
    results = [c for c in chunks if c["type"] == "Metadata" and c["metadata"]["kind"] == "tool_result"]
    assert len(results) == 2 and int(results[0]["metadata"]["stdout"]) > 0
    assert results[1]["metadata"]["committed"] is True
    assert hashlib.sha256(model.read_bytes()).hexdigest() == before  # --out leaves MODEL untouched
    assert "NEXUS-CLI-TEST" in out.read_text()


def test_run_exits_non_zero_when_the_run_cannot_complete(tmp_path, sample_ifc):
    broken = tmp_path / "broken.json"
    broken.write_text('{"turns": [[{"speech": "x"}]]}')
    failed = _nexus("run", "anything", "--ifc", str(sample_ifc), "--model", f"scripted:{broken}", "--json",
                    "--out", str(tmp_path / "o.ifc"), "--db", str(tmp_path / "f.db"))
    assert failed.returncode != 0
    assert "each item is one of thinking, text, tool_call" in failed.stderr + failed.stdout
    assert not (tmp_path / "o.ifc").exists()
