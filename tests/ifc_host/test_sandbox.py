"""Issue 13 H2: what a script run by a real IFC host process can reach, checked from inside a script.

The host is started the way `nexus run` and `nexus demo` start it (launcher.start_host_process: its own
process, scrubbed environment, token in NEXUS_TOKEN), connected to a real orchestrator on 127.0.0.1 whose
process holds an API key and a SQLite database.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ifc_host.keeper_process import ISOLATIONS
from ifc_host.launcher import HostProcess, start_host_process
from ifc_host.sandbox import landlock_abi
from tests.conformance.hosts import sample_building
from tests.support.server import RunningServer

REPO_ROOT = Path(__file__).resolve().parents[2]
FAKE_KEY = "fake-anthropic-key-for-the-sandbox-test"

PROBE = """
import json, os, socket
report = {"environ": dict(os.environ), "pid": os.getpid(), "ancestors": {}}
for pid in PIDS:
    seen = {}
    for name in ("cmdline", "environ"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as handle:
                seen[name] = handle.read().decode("utf-8", "replace")
        except OSError as exc:
            seen[name] = "refused: " + type(exc).__name__
    report["ancestors"][str(pid)] = seen
try:
    with open(DB, "rb") as handle:
        report["database"] = "read %d bytes" % len(handle.read())
except OSError as exc:
    report["database"] = "refused: " + type(exc).__name__
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=3).close()
    report["server"] = "connected"
except OSError as exc:
    report["server"] = "refused: " + type(exc).__name__
print(json.dumps(report))
"""


@pytest.fixture(params=ISOLATIONS)
def host_process(request: pytest.FixtureRequest, server: RunningServer, tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[HostProcess, str]]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)  # what the orchestrator's environment would hold
    token = server.token("sandboxed")
    model = tmp_path / "model.ifc"
    model.write_bytes(sample_building().read_bytes())
    host = start_host_process(model, server.url, token, isolation=request.param, log_path=tmp_path / "host.log")
    try:
        yield host, token
    finally:
        host.stop()


def test_a_script_reaches_no_secret_no_database_and_no_server(server: RunningServer, host_process):
    host, token = host_process
    host_id = server.wait_for_host("sandboxed", timeout=60)
    port = int(server.url.rsplit(":", 1)[1])
    code = (f"import os\nPIDS = [os.getppid(), {host.pid}, {os.getpid()}]\nDB = {str(server.db_path)!r}\nPORT = {port}\n"
            + PROBE)
    reply = server.send_to_host(host_id, {"type": "execute", "mode": "collect", "code": code, "timeout_s": 30},
                                timeout=90)
    assert reply["ok"], reply.get("error")
    report = json.loads(reply["stdout"])

    assert "ANTHROPIC_API_KEY" not in report["environ"] and "NEXUS_TOKEN" not in report["environ"]
    assert not any(token in value or FAKE_KEY in value for value in report["environ"].values())
    for pid, seen in report["ancestors"].items():
        for name, text in seen.items():
            assert token not in text and FAKE_KEY not in text, f"/proc/{pid}/{name} revealed a secret"
    # The host's own command line carries no token either (every local user can read it).
    assert token not in Path(f"/proc/{host.pid}/cmdline").read_bytes().decode(errors="replace")
    assert report["database"].startswith("refused"), report["database"]
    assert report["server"].startswith("refused"), report["server"]
    assert "network" in host.log_tail(200)  # the host log says what the sandbox applies


def test_the_host_refuses_a_token_on_the_command_line_and_reads_it_from_the_environment(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("NEXUS_TOKEN", None)
    model = tmp_path / "m.ifc"
    model.write_bytes(sample_building().read_bytes())
    base = [sys.executable, "-m", "cloud.cli", "ifc-host", str(model), "--server", "http://127.0.0.1:9"]
    on_argv = subprocess.run([*base, "--token", "secret"], capture_output=True, text=True, timeout=60, env=env)
    assert on_argv.returncode != 0 and "--token" in on_argv.stderr
    missing = subprocess.run(base, capture_output=True, text=True, timeout=60, env=env)
    assert missing.returncode != 0 and "NEXUS_TOKEN" in missing.stderr and "Traceback" not in missing.stderr
    empty = tmp_path / "empty-token"
    empty.write_text("\n")
    from_file = subprocess.run([*base, "--token-file", str(empty)], capture_output=True, text=True, timeout=60, env=env)
    assert from_file.returncode != 0 and "empty" in from_file.stderr


def test_landlock_and_network_namespaces_are_what_this_machine_offers():
    """The CI machine runs Linux with Landlock: if this fails, the sandbox silently degraded."""
    assert sys.platform.startswith("linux")
    assert landlock_abi() >= 1
