"""Issue 23 H1: a script reaches no Unix socket file: not in /tmp, not in /run, not in the home folder.

Real listeners on socket paths; real keepers and script processes (both isolations), the real `nexus batch`
command and the real `nexus mcp --ifc` server over stdio. Each listener is checked afterwards: it saw no
connection. Ordinary scripts (API edits, util, print, scratch files) still work under the same confinement.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import ifcopenshell
import pytest

from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.keeper_process import ISOLATIONS
from ifc_host.sample import write_sample_model
from tests.batch.support import json_lines, run_batch
from tests.mcp.support import stdio_session, text_of

_counter = iter(range(1_000_000))

# Tries every way to a socket path it is given: a stream connect, a datagram sendto, a socketpair's sendto.
PROBE = """
import json, socket
report = {}
for path in PATHS:
    tries = {}
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        tries["connect"] = "connected"
    except OSError as exc:
        tries["connect"] = "refused: " + str(exc)
    try:
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        a.sendto(b"x", path)
        tries["socketpair"] = "sent"
    except OSError as exc:
        tries["socketpair"] = "refused: " + str(exc)
    report[path] = tries
print(json.dumps(report))
"""


class Listener:
    """A real Unix stream socket listening at `path`; `connections()` counts who connected since."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        os.chmod(path, 0o777)
        self.sock.listen(16)
        self.sock.setblocking(False)

    def connections(self) -> int:
        count = 0
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return count
            conn.close()
            count += 1

    def close(self) -> None:
        self.sock.close()
        self.path.unlink(missing_ok=True)


@pytest.fixture()
def listeners() -> Iterator[list[Listener]]:
    """One listener in /tmp, one in /run (a folder made for it), one in the home folder."""
    tag = uuid.uuid4().hex[:8]
    run_dir = Path("/run") / f"nexus-test-{tag}"
    if not os.access("/run", os.W_OK):
        uid_run = Path(f"/run/user/{os.getuid()}")
        assert uid_run.is_dir(), "neither /run nor /run/user/<uid> is writable: run the tests as root or in a session"
        run_dir = uid_run / f"nexus-test-{tag}"
    run_dir.mkdir()
    home_dir = Path.home() / f".nexus-test-{tag}"
    home_dir.mkdir()
    made = [Listener(Path("/tmp") / f"nexus-test-{tag}.sock"), Listener(run_dir / "db.sock"),
            Listener(home_dir / "agent.sock")]
    try:
        yield made
    finally:
        for listener in made:
            listener.close()
        shutil.rmtree(run_dir, ignore_errors=True)
        shutil.rmtree(home_dir, ignore_errors=True)


def probe_code(listeners: list[Listener]) -> str:
    return f"PATHS = {[str(item.path) for item in listeners]!r}\n" + PROBE


def assert_nothing_reached(stdout: str, listeners: list[Listener]) -> None:
    report = json.loads(stdout.strip().splitlines()[-1])
    for listener in listeners:
        tries = report[str(listener.path)]
        for how, outcome in tries.items():
            assert outcome.startswith("refused: ") and "not permitted" in outcome, (listener.path, how, outcome)
        assert listener.connections() == 0, f"{listener.path} saw a connection"


def test_the_listeners_are_reachable_outside_the_sandbox(listeners: list[Listener]):
    """The check itself: the same connect from the test's own (unconfined) process gets through."""
    for listener in listeners:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(listener.path))
        assert listener.connections() == 1


@pytest.fixture(params=ISOLATIONS)
def own_executor(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[IsolatedExecutor]:
    """A keeper of the test's own, for a test that commits (the module's shared one stays as it was)."""
    model = tmp_path / "model.ifc"
    write_sample_model(str(model))
    runner = IsolatedExecutor(model, isolation=request.param)
    yield runner
    runner.close()


def run(executor: IsolatedExecutor, code: str, mode: str) -> dict:
    return executor.execute(execute_command(f"s{next(_counter)}", mode, code, 60))


@pytest.mark.parametrize("mode", ["collect", "automate"])
def test_a_script_reaches_no_socket_file(shared_executor: IsolatedExecutor, listeners: list[Listener], mode: str):
    reply = run(shared_executor, probe_code(listeners), mode)
    assert reply["ok"], reply.get("error")
    assert_nothing_reached(reply["stdout"], listeners)
    assert "seccomp" in shared_executor.sandbox.get("sockets", "")  # what the host log's `what they can reach` says


def test_ordinary_scripts_still_work(own_executor: IsolatedExecutor):
    executor = own_executor
    code = """
import ifcopenshell.api, ifcopenshell.util.element, os, tempfile
wall = model.by_type("IfcWall")[0]
ifcopenshell.api.run("attribute.edit_attributes", model, product=wall, attributes={"Name": "Sandboxed"})
pset = ifcopenshell.api.run("pset.add_pset", model, product=wall, name="Pset_WallCommon")
ifcopenshell.api.run("pset.edit_pset", model, pset=pset, properties={"FireRating": "EI60"})
with open("notes.txt", "w") as handle:
    handle.write("scratch\\n" * 1000)
with tempfile.NamedTemporaryFile("w", delete=False) as other:
    other.write("more")
print(ifcopenshell.util.element.get_psets(wall)["Pset_WallCommon"]["FireRating"], os.path.getsize("notes.txt"))
"""
    reply = run(executor, code, "automate")
    assert reply["ok"] and reply["committed"], reply.get("error")
    assert reply["stdout"].split() == ["EI60", "8000"]
    saved = ifcopenshell.open(str(executor.save_path))
    assert saved.by_type("IfcWall")[0].Name == "Sandboxed"


def test_a_batch_script_reaches_no_socket_file(tmp_path: Path, listeners: list[Listener]):
    model = tmp_path / "in" / "a.ifc"
    model.parent.mkdir()
    write_sample_model(str(model))
    script = tmp_path / "probe.py"
    script.write_text(probe_code(listeners))
    done = run_batch("--ifc", str(model), "--script", str(script), "--out", str(tmp_path / "out"), "--policy",
                     "readonly", "--json", "--db", str(tmp_path / "db"))
    per_file, _summary = json_lines(done.stdout)
    assert per_file["a.ifc"]["ok"], per_file
    result = next((tmp_path / "out" / ".nexus-batch" / "results").iterdir())
    assert_nothing_reached(json.loads(result.read_text())["stdout"], listeners)


def test_an_mcp_script_reaches_no_socket_file(tmp_path: Path, listeners: list[Listener]):
    model = tmp_path / "model.ifc"
    write_sample_model(str(model))

    async def scenario():
        async with stdio_session("--ifc", str(model), "--db", str(tmp_path / "db.sqlite")) as session:
            return await session.call_tool("execute_data_collection", {"code": probe_code(listeners)})

    result = anyio.run(scenario)
    assert not result.is_error, text_of(result)
    assert_nothing_reached(result.structured_content["stdout"], listeners)


def test_an_eval_task_script_reaches_no_socket_file(tmp_path: Path, listeners: list[Listener]):
    from cloud.evaluation.runner import run_all
    from cloud.evaluation.tasks import load_suite
    from tests.evaluation.conftest import SuiteMaker
    from tests.support.spine import collect, say

    suite = SuiteMaker(tmp_path / "suite")
    suite.task("probe", "def check(before, after, answer):\n    return True\n",
               [collect(probe_code(listeners)), say("Probed.")], policy="readonly")
    (result,) = run_all(load_suite(suite.root).tasks, [suite.scripted])
    assert result.status == "pass", result.detail
    texts = [part["text"] for entry in result.transcript if entry["role"] == "tool" for item in entry["content"]
             for part in item.get("content", []) if part.get("type") == "text"]
    assert len(texts) == 1 and "Output:" in texts[0], result.transcript
    assert_nothing_reached(texts[0].split("Output:", 1)[1], listeners)
