"""When a commit hands the keeper over to a fresh process (ifc_host/handover.py): a small file's commit keeps
its keeper (a fresh interpreter would cost more than it saves), a file at the size threshold hands over, and so
does a keeper whose memory grew past the bound. Real keepers on real IfcOpenShell; the handover itself is
tested in test_keeper_handover.py."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.handover import (
    GROWTH_VARIABLE,
    MB,
    NEVER,
    SIZE_VARIABLE,
    BadHandoverSetting,
    HandoverPolicy,
)
from ifc_host.sample import write_sample_model
from tests.conformance.ifc_models import write_small_building
from tests.ifc_host.door_renames import RENAME_FIRST_DOOR, commit, first_door, live_children


def keepers_of(model: Path) -> set[int]:
    """The model keepers of `model` that this test process started and that still run."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if parent == os.getpid() and b"ifc_host.keeper" in command and str(model).encode() in command:
            found.add(int(entry.name))
    return found


@pytest.fixture()
def default_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SIZE_VARIABLE, raising=False)
    monkeypatch.delenv(GROWTH_VARIABLE, raising=False)


@pytest.mark.parametrize("isolation", ["fork", "spawn"])
def test_a_small_files_commit_keeps_its_keeper(tmp_path: Path, isolation: str, default_settings: None):
    model = write_small_building(tmp_path / "model.ifc")
    executor = IsolatedExecutor(model, isolation=isolation)
    try:
        assert executor.handover_policy == HandoverPolicy()  # 8 MB, 256 MB of growth
        original = executor.keeper_pid
        commit(executor, "c0", "first")
        assert executor._handover is None, "a successor keeper was started after a small file's commit"
        assert keepers_of(model) == {original}
        executor.wait_warm()  # the keeper prepared its next script's process again
        assert executor.keeper_pid == original and executor.handovers == 0
        assert first_door(executor) == "first"
        if isolation == "spawn":  # every script starts a fresh interpreter: the rest is the same under fork
            return
        before = model.read_bytes()
        failed = executor.execute(execute_command("fail", "automate", RENAME_FIRST_DOOR.format(name="no") +
                                                  "\nraise RuntimeError('boom')", 60))
        assert failed["ok"] is False and failed["committed"] is False
        assert model.read_bytes() == before and first_door(executor) == "first"
        commit(executor, "c1", "second")
        executor.wait_warm()
        assert executor.keeper_pid == original and executor.handovers == 0
        assert first_door(executor) == "second"
    finally:
        executor.close()


def test_a_file_at_the_size_threshold_hands_over_and_one_byte_less_does_not(tmp_path: Path):
    model = write_small_building(tmp_path / "model.ifc")
    executor = IsolatedExecutor(model, isolation="fork", handover=NEVER)
    try:
        commit(executor, "c0", "aaaa")  # the keeper's own serialisation: same-length names keep its size
        size = model.stat().st_size
        original = executor.keeper_pid
        executor.handover_policy = HandoverPolicy(min_bytes=size + 1, growth_bytes=None)
        assert commit(executor, "c1", "bbbb")["successor"] is False  # the keeper applies the policy it is sent
        assert model.stat().st_size == size
        executor.wait_warm()
        assert executor.keeper_pid == original and executor.handovers == 0
        executor.handover_policy = HandoverPolicy(min_bytes=size, growth_bytes=None)
        assert commit(executor, "c2", "cccc")["successor"] is True
        assert model.stat().st_size == size
        executor.wait_warm()
        assert executor.keeper_pid != original and executor.handovers == 1
        assert first_door(executor) == "cccc"
        assert keepers_of(model) == {executor.keeper_pid}
    finally:
        executor.close()


def test_a_keeper_that_serves_on_prepares_its_next_processes_unasked(tmp_path: Path):
    """The commit reply says no successor follows, and the keeper forks its next scripts' processes after it
    on its own: no second message from the runtime is needed (or sent) after the commit."""
    model = write_small_building(tmp_path / "model.ifc")
    executor = IsolatedExecutor(model, isolation="fork", handover=NEVER)
    try:
        executor.wait_warm()
        before = live_children(executor.keeper_pid)
        reply = commit(executor, "c0", "first")
        assert reply["successor"] is False and executor._handover is None
        deadline = time.monotonic() + 60
        while len(live_children(executor.keeper_pid) - before) < 2:  # ForkStrategy.ahead
            assert time.monotonic() < deadline, "the keeper did not prepare its next scripts' processes"
            time.sleep(0.05)
        assert first_door(executor) == "first"
    finally:
        executor.close()


def test_a_keeper_whose_memory_grew_past_the_bound_hands_over(tmp_path: Path):
    model = tmp_path / "model.ifc"
    write_sample_model(model, storeys=2)  # a few thousand entities: every commit leaves the keeper bigger
    executor = IsolatedExecutor(model, isolation="fork", handover=HandoverPolicy(min_bytes=None, growth_bytes=MB**4))
    try:
        original = executor.keeper_pid
        commit(executor, "c0", "first")
        executor.wait_warm()
        grown = executor.keeper_memory_growth
        assert grown is not None and grown > 0, grown
        assert executor.keeper_pid == original and executor.handovers == 0
        # IfcOpenShell keeps what the replaced model used: the next commit leaves the keeper at least this big.
        executor.handover_policy = HandoverPolicy(min_bytes=None, growth_bytes=grown)
        commit(executor, "c1", "second")
        executor.wait_warm()
        assert executor.keeper_pid != original and executor.handovers == 1
        assert first_door(executor) == "second"
        successor_growth = executor.keeper_memory_growth
        assert successor_growth is not None and successor_growth < grown, (successor_growth, grown)
    finally:
        executor.close()


@pytest.mark.parametrize(("size", "growth", "expected"), [
    ("0", "off", HandoverPolicy(min_bytes=0, growth_bytes=None)),
    ("off", "1.5", HandoverPolicy(min_bytes=None, growth_bytes=round(1.5 * MB))),
    (" 32 ", "", HandoverPolicy(min_bytes=32 * MB)),
    ("", "", HandoverPolicy(min_bytes=8 * MB, growth_bytes=256 * MB)),
])
def test_the_settings_read_from_the_environment(monkeypatch: pytest.MonkeyPatch, size: str, growth: str,
                                                expected: HandoverPolicy):
    monkeypatch.setenv(SIZE_VARIABLE, size)
    monkeypatch.setenv(GROWTH_VARIABLE, growth)
    assert HandoverPolicy.from_environment() == expected


@pytest.mark.parametrize(("variable", "value", "says"), [
    (SIZE_VARIABLE, "big", "is not a size in MB"),
    (SIZE_VARIABLE, "-1", "must be a size of 0 MB or more"),
    (GROWTH_VARIABLE, "nan", "must be a size of 0 MB or more"),
])
def test_a_bad_setting_is_refused_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str,
                                            value: str, says: str):
    monkeypatch.setenv(variable, value)
    with pytest.raises(BadHandoverSetting, match=f"{variable}={value!r} {says}"):
        IsolatedExecutor(tmp_path / "model.ifc")  # refused before a keeper starts (there is no file at all)
