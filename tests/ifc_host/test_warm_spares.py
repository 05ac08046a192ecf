"""Back-to-back reads (an MCP client calling again the moment it has the answer) find a script process that
is already confined and waiting: under fork a child of the read server (read_server.py), where there is none a
spare (two kept), and the housekeeping after a reply does not wait for the last script's process to be torn
down. Real keeper, real forked processes, real file."""
from __future__ import annotations

from pathlib import Path

import pytest

from ifc_host import child
from ifc_host import keeper as keeper_module
from ifc_host.executor import execute_command
from ifc_host.isolation import ForkStrategy
from ifc_host.keeper import RETIRED_KEPT, Keeper
from ifc_host.model_file import open_checked
from ifc_host.sample import write_sample_model

READ = "print(len(model.by_type('IfcDoor')))"


def _collect(keeper: Keeper, n: int, code: str = READ) -> dict:
    command = execute_command(f"r{n}", "collect", code, 60.0).to_dict()
    reply = keeper.handle({"op": "execute", "command": command, "model_name": None})
    assert reply["ok"], reply
    return reply


def _keeper(path: Path, serve_reads: bool = True) -> Keeper:
    write_sample_model(str(path), storeys=1)
    child.preimport()
    keeper = Keeper(open_checked(path), path, 60.0, isolation="fork")
    assert isinstance(keeper.strategy, ForkStrategy)
    keeper.strategy.serve_reads = keeper.strategy.serve_reads and serve_reads
    return keeper


def test_reads_are_served_by_the_read_server_and_two_confined_spares_wait_for_automations(tmp_path: Path):
    keeper = _keeper(tmp_path / "sample.ifc")
    if not keeper.strategy.serve_reads:
        keeper.shutdown()
        pytest.skip("no read server here (fork and Landlock ABI 6+)")
    try:
        doors = len(keeper.model.by_type("IfcDoor"))
        keeper.handle({"op": "warm"})
        spares = list(keeper.strategy.spares)
        server = keeper.strategy.server
        assert len(spares) == 2 and all(run.sandbox for run, _path in spares), "both confined and waiting"
        for n in range(4):
            assert _collect(keeper, n)["stdout"].strip() == str(doors)
            keeper.after_reply()
            assert len(keeper.retired) <= RETIRED_KEPT
        assert keeper.strategy.server is server and server.sent == 4, "each read went to the same server"
        assert keeper.strategy.spares == spares, "no read took a spare, none was forked"
    finally:
        keeper.shutdown()
    assert not keeper.retired, "shutdown reaps every finished script process"


def test_without_a_read_server_the_next_read_takes_the_oldest_ready_spare(tmp_path: Path):
    keeper = _keeper(tmp_path / "sample.ifc", serve_reads=False)
    try:
        doors = len(keeper.model.by_type("IfcDoor"))
        for n in range(4):
            assert _collect(keeper, n)["stdout"].strip() == str(doors)
            keeper.after_reply()
            assert len(keeper.retired) <= RETIRED_KEPT
        keeper.handle({"op": "warm"})
        assert len(keeper.strategy.spares) == 2, "the next two calls each find a spare"
        assert all(run.sandbox for run, _path in keeper.strategy.spares), "both confined and waiting"
        # The next read takes the oldest ready spare; the other is still there for the call after it.
        taken, other = keeper.strategy.spares
        _collect(keeper, 99)
        assert keeper.strategy.spares[0] is other and taken not in keeper.strategy.spares
    finally:
        keeper.shutdown()
    assert not keeper.retired, "shutdown reaps every finished script process"


def test_a_read_still_running_has_its_spare_replaced_while_it_runs(tmp_path: Path):
    """A read-only script cannot change the committed model: once it has run for a moment
    (READ_REPLACES_SPARE_AFTER_S), the spare it took is replaced while it runs (the keeper only waits for it
    meanwhile), so by the time its reply is sent the keeper holds both spares again and a call that follows at
    once waits for no fork. An automation's is replaced only after the reply (it may change the model, which
    makes every spare useless). (Without a read server: with one, a read takes no spare.)"""
    keeper = _keeper(tmp_path / "sample.ifc", serve_reads=False)
    try:
        keeper.after_reply()  # as after the keeper's first message: the spares kept ahead are started
        keeper.handle({"op": "warm"})
        ahead = len(keeper.strategy.spares)
        assert ahead == 2
        before = [run for run, _path in keeper.strategy.spares]
        slow_read = f"import time\ntime.sleep({keeper_module.READ_REPLACES_SPARE_AFTER_S * 3 + 0.2:g})\n{READ}"
        _collect(keeper, 1, slow_read)  # no after_reply: what the reply found when it was sent
        now = [run for run, _path in keeper.strategy.spares]
        assert len(now) == ahead, "the read's replacement was started while it ran"
        assert now[0] is before[1] and now[1] not in before
        command = execute_command("a1", "automate", "pass", 60.0, hold=False).to_dict()
        reply = keeper.handle({"op": "execute", "command": command, "model_name": None})
        assert reply["ok"], reply
        assert len(keeper.strategy.spares) == ahead - 1, "an automation's spare is replaced after the reply"
    finally:
        keeper.shutdown()


def test_a_short_read_leaves_its_spares_replacement_for_after_the_reply(tmp_path: Path, monkeypatch):
    """A read that ends before READ_REPLACES_SPARE_AFTER_S (here made long, so this one surely does) is answered
    without waiting for a fork of the keeper: its spare is replaced by the housekeeping after the reply, while
    the other spare, confined and waiting, is there for a call that follows at once."""
    monkeypatch.setattr(keeper_module, "READ_REPLACES_SPARE_AFTER_S", 600.0)
    keeper = _keeper(tmp_path / "sample.ifc", serve_reads=False)
    try:
        keeper.after_reply()
        keeper.handle({"op": "warm"})
        before = [run for run, _path in keeper.strategy.spares]
        assert len(before) == 2
        _collect(keeper, 1)
        now = [run for run, _path in keeper.strategy.spares]
        assert now == [before[1]], "no fork before the reply; the other spare waits for the next call"
        assert now[0].sandbox, "and it is confined already"
        keeper.after_reply()
        now = [run for run, _path in keeper.strategy.spares]
        assert len(now) == 2 and now[0] is before[1] and now[1] not in before, "replaced after the reply"
        assert _collect(keeper, 2)["ok"]
    finally:
        keeper.shutdown()
