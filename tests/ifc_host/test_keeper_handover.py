"""After a commit the keeper hands over to a fresh process that opened the new file (issue 29, item 2): its
memory stays that of one model however many commits came before, rollbacks stay exact, and what the keeper
knows (late decisions, the saved file's identity) survives the handover. It does so on a big file or once its
memory grew (ifc_host/handover.py), not after a small file's commit. These tests hand over after every commit
(handover.ALWAYS), except those of the policy itself. Real keepers on real IfcOpenShell."""
from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ifc_host.executor import IsolatedExecutor, KeeperUnavailable, execute_command
from ifc_host.file_identity import file_signature
from ifc_host.handover import ALWAYS
from ifc_host.keeper_process import ISOLATIONS
from ifc_host.sample import write_sample_model
from tests.ifc_host.door_renames import RENAME_FIRST_DOOR, commit, first_door, live_children

HALF_DONE_THEN_FAIL = ("for wall in model.by_type('IfcWall')[:10]:\n    wall.Name = 'half done'\n"
                       "raise RuntimeError('boom')\n")


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def built_office(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once for the module (about 5 s of CPU), copied for each test."""
    path = tmp_path_factory.mktemp("office") / "office.ifc"
    write_sample_model(path, storeys=10, scale=5)  # ~56,000 entities: a replaced model's memory shows
    return path


@pytest.fixture()
def big_model(tmp_path: Path, built_office: Path) -> Path:
    path = tmp_path / "office.ifc"
    shutil.copyfile(built_office, path)
    return path


@pytest.fixture()
def executor(big_model: Path) -> Iterator[IsolatedExecutor]:
    runner = IsolatedExecutor(big_model, isolation="fork", handover=ALWAYS)
    yield runner
    runner.close()


def test_every_commit_hands_over_to_a_fresh_keeper_of_one_model(executor: IsolatedExecutor, big_model: Path):
    executor.wait_warm()
    pids = [executor.keeper_pid]
    first = rss_kb(pids[0])
    sizes = []
    for n in range(6):
        commit(executor, f"c{n}", f"commit {n}")
        executor.wait_warm()
        pids.append(executor.keeper_pid)
        sizes.append(rss_kb(pids[-1]))
    assert len(set(pids)) == len(pids), f"the keeper was not replaced after every commit: {pids}"
    assert executor.handovers == 6
    # One model's worth, not one more per commit (IfcOpenShell keeps what a replaced model used: without the
    # handover the keeper grows by about a model's size at every commit).
    assert max(sizes) <= first * 1.25 + 20_000, (first, sizes)
    assert first_door(executor) == "commit 5"
    # Rollback stays exact on the successor: the file is untouched and the model is the last commit's.
    before = sha(big_model)
    failed = executor.execute(execute_command("fail", "automate", HALF_DONE_THEN_FAIL, 60))
    assert failed["ok"] is False and failed["committed"] is False
    assert sha(big_model) == before
    assert first_door(executor) == "commit 5"
    for pid in pids[:-1]:  # the replaced keepers are gone
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists() and Path(f"/proc/{pid}/status").read_text().find("zombie") < 0:
            assert time.monotonic() < deadline, f"replaced keeper {pid} still runs"
            time.sleep(0.1)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_held_automation_and_a_late_decision_survive_the_handover(tmp_path: Path, isolation: str):
    model = tmp_path / "model.ifc"
    write_sample_model(model, storeys=2)
    runner = IsolatedExecutor(model, isolation=isolation, hold_timeout_s=3.0, handover=ALWAYS)
    try:
        runner.wait_warm()
        # An automation that expires unanswered: the keeper remembers why a late decision is refused.
        held = runner.execute(execute_command("expires", "automate", RENAME_FIRST_DOOR.format(name="never"), 60, hold=True))
        assert held["held"] is True, held.get("error")
        time.sleep(3.5)
        original = runner.keeper_pid
        commit(runner, "c0", "first")
        # Held right after the commit: the successor must wait for the decision, not take the held work away.
        held = runner.execute(execute_command("h1", "automate", RENAME_FIRST_DOOR.format(name="kept"), 60, hold=True))
        assert held["held"] is True, held.get("error")
        time.sleep(1.0)
        assert runner.keeper_pid == original, "the keeper was replaced while an automation was held"
        kept = runner.decide("h1", "keep")
        assert kept["committed"] is True, kept.get("error")
        runner.wait_warm()
        assert runner.keeper_pid != original and runner.handovers >= 1
        assert first_door(runner) == "kept"
        late = runner.decide("expires", "keep")
        assert late.get("unknown") and "no decision arrived within 3 s" in late["message"], late
    finally:
        runner.close()


def test_a_successor_refuses_a_file_changed_since_the_commit(tmp_path: Path):
    model = tmp_path / "model.ifc"  # the refusal reads the file's signature, not its size: a small model does
    write_sample_model(model, storeys=2)
    executor = IsolatedExecutor(model, isolation="fork", handover=ALWAYS)
    try:
        commit(executor, "c0", "ours")
        executor.wait_warm()
        assert executor.handovers == 1
        written = file_signature(model)
        assert written is not None
        stale = (*written[:3], written[3] + 1)  # another program's save: same size, another mtime
        proc, conn = executor._launch(model, stale)
        with pytest.raises(KeeperUnavailable, match="changed on disk since the previous keeper saved it"):
            executor._hello(proc, conn, model)
    finally:
        executor.close()


def test_a_successor_that_dies_while_loading_loses_nothing(executor: IsolatedExecutor, big_model: Path):
    executor.wait_warm()
    original = executor.keeper_pid
    commit(executor, "c0", "before the crash")
    deadline = time.monotonic() + 60
    while executor._successor is None:
        assert time.monotonic() < deadline, "no successor keeper was started after the commit"
        time.sleep(0.01)
    os.kill(executor._successor.pid, 9)
    executor.wait_handover()
    assert executor.keeper_pid == original and executor.handovers == 0
    assert first_door(executor) == "before the crash"
    # That read told the keeper its successor is not coming: it prepares its scripts' processes again.
    deadline = time.monotonic() + 60
    while len(live_children(original)) < 2:  # ForkStrategy.ahead
        assert time.monotonic() < deadline, "the keeper whose successor died did not prepare spares again"
        time.sleep(0.05)
    commit(executor, "c1", "after the crash")  # the old keeper goes on committing, and hands over then
    executor.wait_warm()
    assert executor.keeper_pid != original and executor.handovers == 1
    assert first_door(executor) == "after the crash"
