"""The thin Revit-facing layer of the runtime, run on the fake Revit's main thread."""
from __future__ import annotations

import base64
import hashlib
import io
import os
import tempfile

import pytest
from nexus_runtime.changes import ChangeSet
from nexus_runtime.ids import element_id_values
from nexus_runtime.log import RuntimeLog
from PIL import Image

from cloud.contract import validate_host_message
from tests.revit.conftest import make_revit, runtime_module
from tests.revit.fake_revit import db as DB
from tests.revit.fake_revit import events, uninstall

ADD_WALL = ("level = DB.FilteredElementCollector(doc).OfClass(DB.Level).FirstElement()\n"
            "wall = DB.Wall.Create(doc, DB.Line.CreateBound(DB.XYZ(100, 100, 0), DB.XYZ(130, 100, 0)), level.Id, False)\n"
            "print(wall.Id.Value)\n")


def execute(revit, code: str, mode: str = "automate", **extra):
    message = {"type": "execute", "request_id": "r-" + mode, "mode": mode, "code": code, "timeout_s": 10, **extra}
    reply = revit.run_on_main(runtime_module("executor").execute, revit.uiapp, message, RuntimeLog())
    return validate_host_message(reply)


def epilogue(code: str) -> dict:
    return {"code": code, "sha256": hashlib.sha256(code.encode()).hexdigest(), "capability_version": "test"}


def walls(revit) -> list:
    return [e for e in revit.doc._elements.values() if isinstance(e, DB.Wall)]


# --- execute -------------------------------------------------------------------------------------


def test_collect_always_rolls_back_and_returns_stdout(revit):
    before = revit.document_bytes()
    reply = execute(revit, ADD_WALL + "print('made one')\n", mode="collect")
    assert reply["ok"] is True and reply["committed"] is False
    assert reply["stdout"].endswith("made one\n")
    assert reply["changes"] == {"added": [], "modified": [], "deleted": []}
    assert revit.document_bytes() == before and not revit.doc.IsModifiable


def test_automate_commits_and_reports_the_changes_of_this_transaction(revit):
    reply = execute(revit, ADD_WALL)
    new_id = int(reply["stdout"])
    assert reply["ok"] and reply["committed"]
    assert reply["changes"]["added"] == [new_id]
    assert new_id not in reply["changes"]["modified"] and reply["changes"]["deleted"] == []
    assert len(reply["changes"]["modified"]) >= 2  # regeneration: the level's plan, the 3D view, bookkeeping
    assert any(w.Id.Value == new_id for w in walls(revit))


def test_warnings_are_reported_and_dismissed_so_no_dialog_blocks(revit):
    ids = [w.Id.Value for w in walls(revit)][:2]
    code = f"for i in {ids!r}:\n    doc.GetElement(DB.ElementId(i)).LookupParameter('Mark').Set('W-1')\n"
    reply = execute(revit, code)
    assert reply["committed"] is True
    assert reply["failures"] == [{"severity": "warning", "message": 'Elements have duplicate "Mark" values.',
                                  "element_ids": ids}]
    assert revit.blocking_dialogs == []


def test_a_commit_that_revit_rolls_back_is_a_failed_run(revit):
    revit.updaters.append(lambda doc: doc.PostFailure(
        DB.FailureMessage(DB.BuiltInFailures.JoinElementsFailures.CannotJoinElementsError)))
    before = revit.document_bytes()
    reply = execute(revit, ADD_WALL)
    assert reply["ok"] is False and reply["committed"] is False
    assert reply["error"]["type"] == "TransactionRolledBack" and "Can't join elements." in reply["error"]["message"]
    assert {"severity": "error", "message": "Can't join elements."} in reply["failures"]
    assert reply["changes"] == {"added": [], "modified": [], "deleted": []}
    assert revit.document_bytes() == before and revit.blocking_dialogs == []


def test_a_failing_script_rolls_back_with_its_line(revit):
    before = revit.document_bytes()
    code = ADD_WALL + "x = 1\nraise ValueError('nope')\n"
    reply = execute(revit, code)
    assert reply["ok"] is False and reply["error"]["type"] == "ValueError" and reply["error"]["line"] == 5
    assert revit.document_bytes() == before


def test_a_script_that_opens_its_own_transaction_is_told_why_it_failed(revit):
    reply = execute(revit, "t = DB.Transaction(doc, 'mine')\nt.Start()\n")
    assert reply["ok"] is False and reply["error"]["type"] == "InvalidOperationException"
    assert "Starting a new transaction is not permitted" in reply["error"]["message"]
    assert not revit.doc.IsModifiable


def test_a_script_past_its_timeout_is_stopped_and_rolled_back(revit):
    before = revit.document_bytes()
    reply = execute(revit, ADD_WALL + "while True:\n    pass\n", timeout_s=0.3)
    assert reply["ok"] is False and reply["timed_out"] is True and reply["error"]["type"] == "ScriptTimeout"
    assert revit.document_bytes() == before


def test_the_epilogue_runs_after_commit_read_only_and_sees_the_changes(revit):
    reading = "print(sorted(nexus_changes()['added']))\n"
    reply = execute(revit, ADD_WALL, epilogue=epilogue(reading))
    assert reply["committed"] and reply["epilogue_stdout"] == f"{reply['changes']['added']}\n"

    writing = "w = doc.GetElement(DB.ElementId(nexus_changes()['added'][0]))\nw.LookupParameter('Mark').Set('x')\n"
    reply = execute(revit, ADD_WALL, epilogue=epilogue(writing))
    assert reply["committed"] is True
    assert "[change report failed]" in reply["epilogue_stdout"]
    assert "ModificationOutsideTransactionException" in reply["epilogue_stdout"]


def test_an_epilogue_whose_hash_does_not_match_is_not_run(revit):
    bad = dict(epilogue("print('should not run')\n"), sha256="0" * 64)
    reply = execute(revit, ADD_WALL, epilogue=bad)
    assert reply["committed"] and "was not run" in reply["epilogue_stdout"]


def test_no_epilogue_after_a_collect_or_a_failure(revit):
    assert "epilogue_stdout" not in execute(revit, "pass\n", mode="collect", epilogue=epilogue("print(1)\n"))
    assert "epilogue_stdout" not in execute(revit, "1/0\n", epilogue=epilogue("print(1)\n"))


def test_refuses_to_run_while_another_transaction_is_open_or_no_document(revit):
    other = DB.Transaction(revit.doc, "someone else")
    revit.run_on_main(other.Start)
    try:
        reply = execute(revit, "pass\n")
        assert reply["ok"] is False and reply["error"]["type"] == "RevitBusy"
    finally:
        revit.run_on_main(other.RollBack)
    revit.close_document()
    assert execute(revit, "pass\n")["error"]["type"] == "NoDocument"


# --- change tracking -----------------------------------------------------------------------------


def test_document_changed_is_filtered_by_document_transaction_and_operation(revit):
    changes = ChangeSet()
    other_doc = DB.Document(revit, "Other")
    ids = [DB.ElementId(7)]

    def fire(document, name, operation="TransactionCommitted"):
        args = events.DocumentChangedEventArgs(document, [name], ids, [], [])
        args.Operation = getattr(events.UndoOperation, operation)
        revit.app.DocumentChanged.fire(revit.app, args)

    tracker = runtime_module("change_tracking").DocumentChangeTracker(revit.app, revit.doc, "ours", changes, RuntimeLog())
    with tracker:
        fire(other_doc, "ours")
        fire(revit.doc, "theirs")
        fire(revit.doc, "ours", "TransactionUndone")
        assert changes.is_empty()
        fire(revit.doc, "ours")
    fire(revit.doc, "ours")  # after the run: no longer subscribed
    assert changes.as_message() == {"added": [7], "modified": [], "deleted": []}
    assert revit.app.DocumentChanged.handlers == []


def test_element_ids_read_integer_value_before_revit_2024():
    session = make_revit(version=2023)
    try:
        assert element_id_values([DB.ElementId(5), DB.ElementId(9)]) == [5, 9]
        reply = execute(session, ADD_WALL.replace("wall.Id.Value", "wall.Id.IntegerValue"))
        assert reply["committed"] and reply["changes"]["added"] == [int(reply["stdout"])]
    finally:
        session.stop()
        uninstall()


# --- export view ---------------------------------------------------------------------------------


def export(revit, **message):
    full = {"type": "export_view", "request_id": "x1", "max_px": 400, **message}
    exporter = runtime_module("image_export").export_view
    return validate_host_message(revit.run_on_main(exporter, revit.uiapp, full, RuntimeLog()))


def decoded(reply) -> Image.Image:
    image = Image.open(io.BytesIO(base64.b64decode(reply["png_base64"])))
    assert image.format == "PNG" and image.size == (reply["width"], reply["height"])
    return image


def test_export_view_fits_the_longer_side_to_max_px(revit):
    reply = export(revit, view="Level 2")
    assert reply["ok"] and reply["view"] == "Level 2" and decoded(reply).size == (400, 267)
    tall = DB.ViewPlan(revit.doc, "Tall", revit.element("Level 1"), outline=(30.0, 90.0))
    revit.doc._seed(tall)
    reply = export(revit, view="Tall")
    assert decoded(reply).size == (133, 400)


def test_export_view_uses_a_fresh_folder_and_cleans_it_up(revit):
    before = set(os.listdir(tempfile.gettempdir()))
    export(revit, view="{3D}")
    export(revit, view="{3D}")
    leftovers = [n for n in set(os.listdir(tempfile.gettempdir())) - before if n.startswith("nexus-export-")]
    assert leftovers == []


def test_views_that_cannot_be_printed_get_a_clear_error(revit):
    reply = export(revit, view="Door Schedule")
    assert reply["ok"] is False and "cannot be exported" in reply["error"] and "Door Schedule" in reply["error"]


def test_an_unknown_view_lists_the_views_that_can_be_exported(revit):
    reply = export(revit, view="Level 9")
    assert reply["ok"] is False and "No view named 'Level 9'" in reply["error"] and "Level 1" in reply["error"]


def test_without_a_view_the_export_shows_the_given_elements_or_the_active_view(revit):
    level_3_wall = next(w for w in walls(revit) if w.LevelId == revit.element("Level 3").Id)
    assert export(revit, element_ids=[level_3_wall.Id.Value])["view"] == "Level 3"
    assert export(revit)["view"] == "Level 1"  # the active view
    active_wall = next(w for w in walls(revit) if w.LevelId == revit.element("Level 1").Id)
    assert export(revit, element_ids=[active_wall.Id.Value])["view"] == "Level 1"


@pytest.fixture
def no_document_revit():
    session = make_revit(with_document=False)
    yield session
    session.stop()
    uninstall()


def test_export_without_a_document_fails_cleanly(no_document_revit):
    reply = export(no_document_revit, view="Level 1")
    assert reply == {"type": "export_view_result", "request_id": "x1", "ok": False,
                     "error": "No Revit document is open."}
