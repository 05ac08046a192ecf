"""A commit worked out ahead (trusted_report.ReportAhead): while the script's process serialises the model it
commits, the keeper patches its model and works the report out on the records that process says the run
changed, and takes that only if the model then sent differs from the committed one in exactly those records.
A script that goes round the change recorder (or whose recorder names too much) gets its commit worked out
from the model it sent, as always. Real keeper and script processes under both isolations (one keeper per isolation: tests/ifc_host/shared_keeper.py)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.keeper_process import ISOLATIONS
from ifc_host.model_diff import HINT_MAX_RECORDS
from ifc_host.model_file import open_checked
from ifc_host.sample import write_sample_model
from tests.ifc_host.shared_keeper import SharedKeeper

_counter = iter(range(1_000_000))


@pytest.fixture(scope="module", params=ISOLATIONS)
def shared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedKeeper]:
    path = tmp_path_factory.mktemp(f"ahead-{request.param}") / "model.ifc"
    write_sample_model(path, storeys=2)
    keeper = SharedKeeper(path, isolation=str(request.param))
    yield keeper
    keeper.close()


@pytest.fixture()
def executor(shared: SharedKeeper) -> Iterator[IsolatedExecutor]:
    yield from shared.lend()  # the module's keeper, on the model as first written


def commit(executor: IsolatedExecutor, code: str) -> dict:
    reply = executor.execute(execute_command(f"a{next(_counter)}", "automate", code, 120))
    assert reply["ok"] and reply["committed"], reply.get("error")
    return reply


def walls(executor: IsolatedExecutor) -> list:
    return sorted(open_checked(executor.model_path).by_type("IfcWall"), key=lambda w: w.id())


def test_a_recorded_change_is_worked_out_ahead_and_saved_as_reported(executor: IsolatedExecutor):
    first = walls(executor)[0].id()
    for n in range(2):  # the first keeper's commit, then one on the model it patched
        reply = commit(executor, f"model.by_id({first}).Name = 'ahead {n}'")
        assert reply["worked_out_ahead"] is True
        assert reply["changes"]["modified"] == [first]
        assert walls(executor)[0].Name == f"ahead {n}"


def test_a_change_round_the_recorder_is_not_taken_from_the_guess(executor: IsolatedExecutor):
    first, second = (wall.id() for wall in walls(executor)[:2])
    code = (f"model.by_id({first}).Name = 'seen'\n"
            f"model.transaction = None\nmodel.by_id({second}).Name = 'unseen'\n")
    reply = commit(executor, code)
    assert reply["worked_out_ahead"] is False  # the model sent differs in one more record than guessed
    assert sorted(reply["changes"]["modified"]) == sorted([first, second])
    assert [w.Name for w in walls(executor)[:2]] == ["seen", "unseen"]
    again = commit(executor, f"model.by_id({second}).Name = 'seen too'")  # the model was put back and patched
    assert again["worked_out_ahead"] is True and again["changes"]["modified"] == [second]
    assert [w.Name for w in walls(executor)[:2]] == ["seen", "seen too"]


def test_a_change_the_recorder_names_but_the_model_does_not_hold_is_not_taken(executor: IsolatedExecutor):
    first = walls(executor)[0].id()
    old_name = walls(executor)[0].Name
    code = (f"wall = model.by_id({first})\nwall.Name = 'for a moment'\n"
            f"model.transaction = None\nwall.Name = {old_name!r}\n"  # back as it was, the recorder not told
            f"model.by_type('IfcDoor')[0].Name = 'unseen door'\n")
    reply = commit(executor, code)
    assert reply["worked_out_ahead"] is False
    door = min(open_checked(executor.model_path).by_type("IfcDoor"), key=lambda d: d.id())
    assert reply["changes"]["modified"] == [door.id()] and door.Name == "unseen door"
    assert walls(executor)[0].Name == old_name


def test_more_changes_than_a_hint_names_are_worked_out_from_the_model_sent(executor: IsolatedExecutor):
    code = (f"for point in model.by_type('IfcCartesianPoint')[:{HINT_MAX_RECORDS + 1}]:\n"
            "    point.Coordinates = tuple(c + 0.001 for c in point.Coordinates)\n")
    reply = commit(executor, code)
    assert reply["worked_out_ahead"] is False
    assert reply["ok"] and reply["committed"]


FORGED_HINTS = {  # what a script can make its own process send instead of its recorder's hint
    "another record": "{'kind': 'hint', 'records': {str(WALL): FORGED}, 'deleted': []}",
    "not records": "{'kind': 'hint', 'records': ['x'], 'deleted': 'all'}",
    "odd ids and text": "{'kind': 'hint', 'records': {'\\u00b2': 'x', '-1': 'y', '7': '\\ud800'}, 'deleted': [2**40]}",
    "no hint": "{'kind': 'written-not', 'records': None}",
}


@pytest.mark.parametrize("forged", sorted(FORGED_HINTS))
def test_a_forged_hint_never_decides_what_is_committed(executor: IsolatedExecutor, forged: str):
    wall = walls(executor)[0]
    door = min(open_checked(executor.model_path).by_type("IfcDoor"), key=lambda d: d.id())
    forged_line = f"#{wall.id()}=IFCWALL('{wall.GlobalId}',$,'forged',$,$,$,$,$,$);"
    code = (f"import ifc_host.child\nWALL, FORGED = {wall.id()}, {forged_line!r}\n"
            f"ifc_host.child.change_hint = lambda model, recorder: {FORGED_HINTS[forged]}\n"
            f"model.by_id({door.id()}).Name = 'the real change'\n")
    reply = commit(executor, code)
    assert reply["worked_out_ahead"] is False
    assert reply["changes"]["modified"] == [door.id()]
    model = open_checked(executor.model_path)
    assert model.by_id(door.id()).Name == "the real change" and model.by_id(wall.id()).Name == wall.Name
    again = commit(executor, f"model.by_id({wall.id()}).Name = 'after the forgery'")
    assert again["worked_out_ahead"] is True and again["changes"]["modified"] == [wall.id()]
