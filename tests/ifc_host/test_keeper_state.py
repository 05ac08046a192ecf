"""The keeper alone owns the held automation, its expiry and the committed file's signature, and says so in
every reply: the executor reads them from there (KeeperState), on a real keeper process and a real model."""
from __future__ import annotations

import shutil
import time
from pathlib import Path

from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.file_identity import file_signature
from ifc_host.model_file import open_checked
from tests.conformance.ifc_models import write_small_building
from tests.support.waiting import wait_until

RENAME = "model.by_type('IfcWall')[0].Name = {name!r}"


def _raw_reply(runner: IsolatedExecutor, request: dict) -> dict:
    """A keeper reply as it arrives, before the executor takes its state out."""
    with runner._lock:
        assert runner._conn is not None
        runner._conn.send(request)
        assert runner._conn.poll(120)
        return runner._conn.recv()


def test_every_reply_carries_the_held_state_its_expiry_and_the_disk_signature(tmp_path: Path):
    model = write_small_building(tmp_path / "model.ifc")
    out = tmp_path / "out.ifc"
    runner = IsolatedExecutor(model, out, hold_timeout_s=60)
    try:
        state = runner.keeper_state  # from the keeper's first message
        assert (state.committed_path, state.signature, state.held_request_id) == (model, file_signature(model), None)
        idle = _raw_reply(runner, {"op": "warm"})
        assert idle["keeper"] == {"held": None, "committed_path": str(model), "signature": list(file_signature(model))}

        held = runner.execute(execute_command("h1", "automate", RENAME.format(name="held"), 60, hold=True))
        assert held["held"] and "keeper" not in held  # the executor took it out: it is not part of the result
        state = runner.keeper_state
        assert state.held_request_id == "h1" == runner.held_request_id
        assert state.held_until is not None and 0 < state.held_until - time.monotonic() <= 60
        raw = _raw_reply(runner, {"op": "warm"})["keeper"]
        assert raw["held"]["request_id"] == "h1" and 0 < raw["held"]["expires_in_s"] <= 60

        kept = runner.decide("h1", "keep")
        assert kept["committed"] and open_checked(out).by_type("IfcWall")[0].Name == "held"
        state = runner.keeper_state
        assert (state.committed_path, state.signature, state.held_request_id) == (out, file_signature(out), None)
        assert runner.committed_path == out
    finally:
        runner.close()


def test_a_hold_the_keeper_lets_expire_is_gone_from_its_next_reply(tmp_path: Path):
    model = write_small_building(tmp_path / "model.ifc")
    runner = IsolatedExecutor(model, hold_timeout_s=2.0)
    try:
        runner.execute(execute_command("h1", "automate", RENAME.format(name="never"), 60, hold=True))
        assert runner.held_request_id == "h1"
        wait_until(lambda: runner.held_request_id is None, timeout=30)
        assert runner.context()  # any reply: the keeper itself says nothing is held any more
        assert runner.keeper_state.held_request_id is None and runner.keeper_state.held_until is None
        late = runner.decide("h1", "keep")
        assert late.get("unknown") and "2 s" in late["message"]
    finally:
        runner.close()


def test_the_signature_of_a_file_changed_on_disk_comes_from_the_keeper_that_reloaded_it(tmp_path: Path):
    model = write_small_building(tmp_path / "model.ifc")
    runner = IsolatedExecutor(model)
    try:
        edited = tmp_path / "edited.ifc"
        shutil.copyfile(model, edited)
        other = open_checked(edited)
        other.by_type("IfcWall")[0].Name = "outside"
        other.write(str(edited))
        edited.replace(model)  # another program saves the model
        read = runner.execute(execute_command("r1", "collect", "print(model.by_type('IfcWall')[0].Name)", 60))
        assert read["stdout"] == "outside\n" and "changed on disk" in read["external_changes"]["summary"]
        assert runner.keeper_state.signature == file_signature(model)
        again = runner.execute(execute_command("r2", "collect", "print(1)", 60))
        assert "external_changes" not in again  # seen once, by the keeper: not reloaded again
    finally:
        runner.close()
