"""A commit without a second read of the model (issue 29, item 3): the keeper patches its own committed model
with the records the run changed (model_patch.InPlace) instead of parsing a second copy of the file, and puts
it back byte for byte when the run is refused, held or discarded; the first keeper's records are serialised
ahead by a forked child (baseline_child.py). Real IfcOpenShell models, a real keeper (in this process, to
look at its model, and as the host runs it)."""
from __future__ import annotations

from pathlib import Path

import ifcopenshell
import ifcopenshell.api
import pytest

from ifc_host.baseline_child import BaselineChild
from ifc_host.executor import IsolatedExecutor, execute_command
from ifc_host.file_identity import file_signature
from ifc_host.keeper import Keeper
from ifc_host.model_diff import NotCanonical, data_section, diff_records
from ifc_host.model_file import open_checked
from ifc_host.model_patch import InPlace
from ifc_host.sample import write_sample_model

EDIT = """
import ifcopenshell.api
doors = sorted(model.by_type('IfcDoor'), key=lambda d: d.id())
doors[0].Name = "Tür 'Nord' \\\\ 😀"
doors[1].OverallHeight = 2.125
ifcopenshell.api.run('root.remove_product', model, product=sorted(model.by_type('IfcWall'), key=lambda w: w.id())[0])
wall = ifcopenshell.api.run('root.create_entity', model, ifc_class='IfcWall', name='new wall')
pset = ifcopenshell.api.run('pset.add_pset', model, product=wall, name='Pset_WallCommon')
ifcopenshell.api.run('pset.edit_pset', model, pset=pset, properties={'FireRating': 'F90', 'IsExternal': True})
"""


@pytest.fixture()
def sample(tmp_path: Path) -> Path:
    path = tmp_path / "office.ifc"
    write_sample_model(path, storeys=2)
    return path


def _text(model: ifcopenshell.file) -> bytes:
    return model.to_string().encode("utf-8")


def test_records_applied_in_place_give_the_model_sent_and_revert_gives_it_back_byte_for_byte(sample: Path):
    committed, script = open_checked(sample), open_checked(sample)
    exec(EDIT, {"model": script})  # noqa: S102 - the script a run would send, run here on a copy
    sent = _text(script)
    before = _text(committed)
    diff = diff_records(data_section(before), data_section(sent))
    assert diff.created and diff.deleted and diff.differing
    patch = InPlace(committed, diff)
    patch.apply()
    assert data_section(_text(committed)) == data_section(sent)
    patch.revert()
    assert _text(committed) == before
    patch.apply()  # (keeping a held automation patches again)
    assert data_section(_text(committed)) == data_section(sent)


def test_records_that_cannot_be_shown_exact_leave_the_model_untouched(sample: Path):
    committed = open_checked(sample)
    before = _text(committed)
    lines = data_section(before).split(b"\n")
    door = next(line for line in lines if b"=IFCDOOR(" in line)
    wall = next(line for line in lines if b"=IFCWALL(" in line)
    twice = data_section(before).replace(door, door.replace(b"IFCDOOR(", b"IFCDOOR(", 1) + b"\n" + door)
    for sent in (twice,  # a record sent twice: no line differs, the file would hold it twice
                 data_section(before).replace(wall, wall.replace(b"=IFCWALL(", b"=IFCSLAB(")),  # another class
                 data_section(before).replace(door, door[:-2] + b",$);")):  # an attribute too many
        with pytest.raises(NotCanonical):
            InPlace(committed, diff_records(data_section(before), sent))
        assert _text(committed) == before


def test_the_host_commits_by_patching_its_model_and_its_model_is_the_saved_file(sample: Path):
    runner = IsolatedExecutor(sample, isolation="fork")
    try:
        for n in range(2):  # the first keeper, then its successor (which read the records from the file)
            reply = runner.execute(execute_command(f"c{n}", "automate", EDIT, 120))
            assert reply["committed"] is True, reply.get("error")
            assert reply["model_read"] == "changed records in place"
            assert reply["changes"]["added"] and reply["changes"]["deleted"] and reply["changes"]["modified"]
            assert runner.document["entities"] == len(open_checked(sample).entity_names())
            read = runner.execute(execute_command(f"r{n}", "collect", "print(model.to_string())", 120))
            assert data_section(read["stdout"].encode("utf-8")) == data_section(sample.read_bytes())
            runner.wait_warm()
    finally:
        runner.close()


def test_a_refused_held_or_discarded_run_leaves_the_committed_model_byte_for_byte(sample: Path):
    model = open_checked(sample)
    keeper = Keeper(model, sample, 60.0, model_path=sample, isolation="fork")
    keeper.committed_signature = keeper.seen_signature = file_signature(sample)
    try:
        keeper.after_reply()
        before = _text(model)
        # Refused: the edit gives a wall the GlobalId of another (validation block): nothing saved, nothing changed.
        duplicate = ("walls = sorted(model.by_type('IfcWall'), key=lambda w: w.id())\n"
                     "walls[1].GlobalId = walls[0].GlobalId\n")
        reply = keeper.execute(execute_command("v", "automate", duplicate, 120, validation="block"))
        keeper.after_reply()
        assert reply["committed"] is False and "GlobalId" in str(reply["failures"]), reply
        assert keeper.model is model and _text(model) == before
        # Held, then discarded: the model stays as it was throughout.
        reply = keeper.execute(execute_command("h1", "automate", EDIT, 120, hold=True))
        assert reply["held"] is True, reply.get("error")
        assert _text(keeper.model) == before
        keeper.decide("h1", "discard")
        keeper.after_reply()
        assert keeper.model is model and _text(model) == before and sample.read_bytes() != b""
        # The change-report script edits the model: refused, and the model is read again as it was.
        epilogue = "model.by_type('IfcDoor')[0].Name = 'edited by the report'\n"
        reply = keeper.execute(execute_command("e", "automate", EDIT, 120, epilogue_code=epilogue))
        keeper.after_reply()
        assert reply["committed"] is False and reply["error"]["type"] == "EpilogueModifiedModel", reply
        assert _text(keeper.model) == before
        # Held, then kept: the same model, patched, is the saved file's.
        model = keeper.model
        reply = keeper.execute(execute_command("h2", "automate", EDIT, 120, hold=True))
        assert reply["held"] is True and _text(model) == before
        kept = keeper.decide("h2", "keep")
        assert kept["committed"] is True, kept.get("error")
        assert kept["model_read"] == "changed records in place"
        assert keeper.model is model and data_section(_text(model)) == data_section(sample.read_bytes())
    finally:
        keeper.shutdown()


def test_the_records_serialised_ahead_are_the_models_own(sample: Path):
    model = open_checked(sample)
    child = BaselineChild(model)
    child.reap(block=True)  # done
    assert child.take() == data_section(_text(model))
    stopped = BaselineChild(model)
    stopped.discard()  # the committed model changed before it was done: nothing is taken from it
    assert stopped.take() is None
