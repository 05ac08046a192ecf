"""Issue 23 item 5: per-script limits (memory, CPU time, scratch, processes) end a script with a normal
result naming the limit, the committed model untouched, and the host serves the next script at once.

Real keepers and script processes under both isolations; limits other than memory are set low through
their environment variables so the tests are quick, and the defaults are checked as the host reports them.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from ifc_host import limits
from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.keeper_process import ISOLATIONS
from ifc_host.sample import write_sample_model

_counter = iter(range(1_000_000))
EDIT_FIRST = "model.by_type('IfcWall')[0].Name = 'must not be saved'\n"


@pytest.fixture(params=ISOLATIONS)
def isolation(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture()
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.ifc"
    write_sample_model(str(path))
    return path


def start(model: Path, isolation: str, monkeypatch: pytest.MonkeyPatch, **variables: str) -> IsolatedExecutor:
    for name in limits.VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    return IsolatedExecutor(model, isolation=isolation)


@pytest.fixture()
def runners() -> Iterator[list[IsolatedExecutor]]:
    made: list[IsolatedExecutor] = []
    yield made
    for runner in made:
        runner.close()


def run(executor: IsolatedExecutor, code: str, mode: str = "automate", timeout_s: float = 60) -> dict:
    return executor.execute(execute_command(f"l{next(_counter)}", mode, code, timeout_s))


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_stopped_and_served_next(executor: IsolatedExecutor, reply: dict, model: Path, before: str,
                                   wording: str) -> None:
    assert reply["ok"] is False and reply["committed"] is False, reply
    assert reply["error"]["type"] == "LimitReached", reply["error"]
    assert reply["error"]["message"].startswith(wording), reply["error"]["message"]
    assert sha(model) == before
    after = run(executor, "print(len(model.by_type('IfcWall')))", "collect")
    assert after["ok"] and int(after["stdout"]) > 0, after.get("error")
    kept = run(executor, "model.by_type('IfcWall')[0].Name = 'after the limit'")
    assert kept["ok"] and kept["committed"], kept.get("error")


@pytest.fixture(scope="module", params=ISOLATIONS)
def default_runner(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                   ) -> Iterator[IsolatedExecutor]:
    """A keeper under the default limits, shared by the tests that need no others (a keeper start costs seconds
    of CPU): the report of its limits is read first, then a script runs into the memory limit."""
    path = tmp_path_factory.mktemp(f"limits-{request.param}") / "model.ifc"
    write_sample_model(str(path))
    with pytest.MonkeyPatch.context() as patch:
        runner = start(path, str(request.param), patch)
    yield runner
    runner.close()


def test_the_defaults_are_what_the_host_applies(default_runner: IsolatedExecutor):
    applied = default_runner.sandbox["limits"]
    assert "memory 4096 MB" in applied and "scratch 1024 MB (tmpfs)" in applied and "256 processes" in applied
    assert "CPU time = timeout x cores + 60 s" in applied


def test_a_5_gib_allocation_stops_at_the_default_memory_limit(default_runner: IsolatedExecutor):
    model = default_runner.model_path
    before = sha(model)
    reply = run(default_runner, EDIT_FIRST + "block = bytearray(5 * 1024 ** 3)\nblock[-1] = 1\n")
    assert_stopped_and_served_next(default_runner, reply, model, before, "stopped: memory limit 4096 MB reached")


def test_a_bounded_fork_bomb_stops_at_the_process_limit(model: Path, isolation: str, monkeypatch, runners):
    runner = start(model, isolation, monkeypatch, NEXUS_SCRIPT_PROCESSES="24")
    runners.append(runner)
    before = sha(model)
    bomb = EDIT_FIRST + """
import os, time
for _ in range(500):  # bounded: at most 1000 processes if no limit held
    if os.fork() == 0:
        try:
            os.fork()
        except OSError:
            pass
        time.sleep(300)
        os._exit(0)
"""
    reply = run(runner, bomb)
    assert_stopped_and_served_next(runner, reply, model, before, "stopped: process limit 24 reached")


def test_a_2_gib_scratch_write_stops_at_the_scratch_limit(model: Path, isolation: str, monkeypatch, runners):
    runner = start(model, isolation, monkeypatch, NEXUS_SCRIPT_SCRATCH_MB="64")
    runners.append(runner)
    before = sha(model)
    many_files = EDIT_FIRST + """
chunk = b"x" * (1024 * 1024)
for n in range(64):  # 2 GiB in files of 32 MB: each is under the limit, their total is not
    with open(f"part-{n}.bin", "wb") as handle:
        for _ in range(32):
            handle.write(chunk)
"""
    reply = run(runner, many_files)
    assert_stopped_and_served_next(runner, reply, model, before, "stopped: scratch limit 64 MB reached")
    one_file = EDIT_FIRST + """
chunk = b"x" * (1024 * 1024)
with open("big.bin", "wb") as handle:
    for _ in range(2048):
        handle.write(chunk)
"""
    reply = run(runner, one_file)
    assert_stopped_and_served_next(runner, reply, model, sha(model), "stopped: scratch limit 64 MB reached")


def test_cpu_time_stops_at_its_limit(model: Path, isolation: str, monkeypatch, runners):
    runner = start(model, isolation, monkeypatch, NEXUS_SCRIPT_CPU_S="2")
    runners.append(runner)
    before = sha(model)
    reply = run(runner, EDIT_FIRST + "while True:\n    pass\n", timeout_s=120)
    assert_stopped_and_served_next(runner, reply, model, before, "stopped: CPU time limit 2 s reached")


def test_a_bad_limit_is_refused_naming_the_variable(model: Path, monkeypatch):
    monkeypatch.setenv("NEXUS_SCRIPT_MEMORY_MB", "lots")
    with pytest.raises(limits.BadLimit, match="NEXUS_SCRIPT_MEMORY_MB='lots' is not a whole number"):
        IsolatedExecutor(model)
