"""Guards around a run, deadlines, the lost-commit check and edits between turns: the real executor on the
fake Revit's main thread (issue 7)."""
from __future__ import annotations

import pytest
from nexus_runtime.log import RuntimeLog
from nexus_runtime.run_services import RunServices

from cloud.contract import validate_host_message
from tests.revit.conftest import runtime_module
from tests.revit.fake_revit import db as DB
from tests.revit.fake_revit import events

ADD_WALL = ("level = DB.FilteredElementCollector(doc).OfClass(DB.Level).FirstElement()\n"
            "wall = DB.Wall.Create(doc, DB.Line.CreateBound(DB.XYZ(100, 100, 0), DB.XYZ(130, 100, 0)), level.Id, False)\n"
            "print(wall.Id.Value)\n")
ANNEX = "annex = [d for d in app.Documents if d.Title == 'Annex'][0]\n"


@pytest.fixture
def annex(revit):
    """A second project open in the background, workshared."""
    document = revit.open_background_document("Annex")
    document._workshared = True
    return document


def execute(revit, code: str, services: RunServices | None = None, mode: str = "automate", **extra) -> dict:
    message = {"type": "execute", "request_id": "r-" + mode, "mode": mode, "code": code, "timeout_s": 10, **extra}
    executor = runtime_module("executor")
    reply = revit.run_on_main(executor.execute, revit.uiapp, message, RuntimeLog(), services)
    return validate_host_message(reply)


def no_guard_handlers_left(revit) -> bool:
    app = revit.app
    slots = [app.DocumentSaving, app.DocumentSavingAs, app.DocumentClosing, app.DocumentSynchronizingWithCentral,
             app.FileExporting, revit.uiapp.DialogBoxShowing]
    return all(slot.handlers == [] for slot in slots)


def test_save_sync_close_and_export_during_a_run_are_cancelled_and_listed(revit, annex):
    code = ANNEX + (
        "attempts = [lambda: annex.Save(),\n"
        "            lambda: annex.SynchronizeWithCentral(DB.TransactWithCentralOptions(), DB.SynchronizeWithCentralOptions()),\n"
        "            lambda: annex.Close(False),\n"
        "            lambda: annex.Export('C:/out', 'plan', [], DB.DWGExportOptions()),\n"
        "            lambda: doc.SaveAs('C:/Projects/copy.rvt')]\n"
        "for attempt in attempts:\n"
        "    try:\n"
        "        attempt()\n"
        "    except Exception as error:\n"
        "        print(type(error).__name__)\n")
    reply = execute(revit, code)
    assert reply["ok"] is True and reply["stdout"].split() == ["OperationCanceledException"] * 5
    assert reply["blocked"] == ["save of 'Annex'", "sync with central of 'Annex'", "close of 'Annex'",
                                "export of 'Annex' (DWG)", "save-as of 'Tower A'"]
    assert annex._operations == [] and annex in revit.documents
    assert no_guard_handlers_left(revit)

    revit.run_on_main(annex.Save)  # outside a run nothing is blocked
    assert annex._operations == ["save"]


def test_documents_opened_during_the_run_are_not_guarded(revit):
    def open_and_save():
        document = revit.open_background_document("Opened later")
        document.Save()
        return document
    reply = execute(revit, "print(1)\n")
    assert "blocked" not in reply
    assert revit.run_on_main(open_and_save)._operations == ["save"]


def test_dialogs_raised_during_a_run_are_dismissed_and_reported(revit):
    revit.updaters.append(lambda doc: revit.show_message_box("Some elements were unjoined.", dialog_type=1))
    code = ADD_WALL + "print(UI.TaskDialog.Show('Heads up', 'The wall is short.'))\n"
    reply = execute(revit, code)
    assert reply["committed"] is True
    assert reply["dialogs"] == [{"message": "The wall is short.", "dismissed": True},
                                {"message": "Some elements were unjoined.", "dismissed": True}]
    assert revit.task_dialogs == []  # nothing left open to block Revit
    assert revit.dismissed_dialogs == [("The wall is short.", 8), ("Some elements were unjoined.", 2)]  # Close, Cancel
    assert no_guard_handlers_left(revit)


def test_a_change_to_another_document_fails_the_run_and_both_are_rolled_back(revit, annex):
    before, annex_before = revit.document_bytes(), revit.document_bytes(annex)
    code = ADD_WALL + ANNEX + (
        "t = DB.Transaction(annex, 'sneaky edit')\n"
        "t.Start()\n"
        "for wall in DB.FilteredElementCollector(annex).OfClass(DB.Wall):\n"
        "    wall.LookupParameter('Mark').Set('touched')\n"
        "t.Commit()\n")
    services = RunServices(RuntimeLog())
    reply = execute(revit, code, services)
    assert reply["ok"] is False and reply["committed"] is False
    assert reply["error"]["type"] == "OtherDocumentChanged" and "'Annex'" in reply["error"]["message"]
    assert revit.document_bytes() == before and revit.document_bytes(annex) == annex_before
    assert annex._groups == []
    assert "external_changes" not in execute(revit, "print(1)\n", services, mode="collect")  # the run's own doing


def test_a_stubborn_infinite_loop_is_stopped_at_its_deadline_and_rolled_back(revit):
    before = revit.document_bytes()
    stubborn = ADD_WALL + "while True:\n    try:\n        doc.GetElement(DB.ElementId(1))\n    except:\n        pass\n"
    reply = execute(revit, stubborn, timeout_s=0.3)
    assert reply["ok"] is False and reply["timed_out"] is True and reply["error"]["type"] == "ScriptTimeout"
    assert revit.document_bytes() == before


def test_after_a_rollback_a_lost_earlier_commit_is_reported(revit):
    services = RunServices(RuntimeLog())
    kept = execute(revit, ADD_WALL, services)
    wall_id = kept["changes"]["added"][0]
    assert services.kept_ids("C:\\Projects\\Tower A.rvt")[0] == wall_id

    healthy = execute(revit, "raise ValueError('no')\n", services)
    assert healthy["error"]["type"] == "ValueError" and healthy["failures"] == []

    doc = revit.doc
    doc._rollback_fault = lambda: doc._elements.pop(wall_id)  # a rollback that undoes more than its run
    broken = execute(revit, "raise ValueError('no')\n", services)
    assert broken["error"]["type"] == "ValueError"
    assert "earlier commit" in broken["error"]["message"] and str(wall_id) in broken["error"]["message"]
    assert any(f["severity"] == "error" and str(wall_id) in f["message"] for f in broken["failures"])


def test_the_commit_check_compares_counts_and_kept_elements(revit):
    integrity = runtime_module("integrity")
    wall = next(e for e in revit.doc._elements.values() if isinstance(e, DB.Wall))
    check = revit.run_on_main(integrity.CommitCheck.capture, revit.doc, [wall.Id.Value, 999999])
    assert check.present_ids == [wall.Id.Value]
    assert revit.run_on_main(check.problems, revit.doc) == []

    def lose_it():
        t = DB.Transaction(revit.doc, "someone deletes it")
        t.Start()
        revit.doc.Delete(wall.Id)
        t.Commit()
    revit.run_on_main(lose_it)
    problems = revit.run_on_main(check.problems, revit.doc)
    assert len(problems) == 2 and str(wall.Id.Value) in problems[0] and "elements before the run" in problems[1]


def test_edits_between_runs_are_reported_once_with_the_next_result(revit):
    services = RunServices(RuntimeLog())
    tracking = runtime_module("external_tracking")
    tracker = tracking.ExternalChangeTracker(revit.app, services, RuntimeLog())
    revit.run_on_main(tracker.start)
    try:
        ours = execute(revit, ADD_WALL, services)
        assert "external_changes" not in ours

        walls = [e for e in revit.doc._elements.values() if isinstance(e, DB.Wall)][:3]

        def person_edits():
            t = DB.Transaction(revit.doc, "Change Mark")
            t.Start()
            for wall in walls:
                wall.LookupParameter("Mark").Set("by hand")
            t.Commit()
        revit.run_on_main(person_edits)

        first = execute(revit, "print(1)\n", services, mode="collect")
        report = first["external_changes"]
        assert report["summary"].startswith("3 elements modified in 'Tower A' by the person")
        assert report["modified"] == sorted(w.Id.Value for w in walls)
        assert "external_changes" not in execute(revit, "print(1)\n", services, mode="collect")

        # the person undoes a NexusAI run: that changes the model behind the agent's back too
        args = events.DocumentChangedEventArgs(revit.doc, ["NexusAI run 1 (r-automate)"], [],
                                               [], [DB.ElementId(ours["changes"]["added"][0])])
        args.Operation = events.UndoOperation.TransactionUndone
        revit.run_on_main(revit.app.DocumentChanged.fire, revit.app, args)
        later = execute(revit, "print(1)\n", services, mode="collect")
        assert later["external_changes"]["deleted"] == ours["changes"]["added"]
        assert "undo or redo" in later["external_changes"]["summary"]
    finally:
        revit.run_on_main(tracker.stop)
