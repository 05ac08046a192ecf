"""The fake Revit API behaves like Revit where the runtime depends on it (see fake_revit/__init__.py).

These pin the fake itself, so a runtime test passing against it means something.
"""
from __future__ import annotations

import os
import threading
import time

import pytest
from PIL import Image

from tests.revit.conftest import make_revit
from tests.revit.fake_revit import FakeRevit, uninstall
from tests.revit.fake_revit import db as DB
from tests.revit.fake_revit import exceptions as RevitExceptions
from tests.revit.fake_revit import ui as UI


def on_main(revit: FakeRevit, function, *args):
    return revit.run_on_main(function, *args)


def first_level(doc):
    return next(e for e in DB.FilteredElementCollector(doc).OfClass(DB.Level))


def new_wall(doc, x: float = 200.0):
    line = DB.Line.CreateBound(DB.XYZ(x, 0, 0), DB.XYZ(x + 10, 0, 0))
    return DB.Wall.Create(doc, line, first_level(doc).Id, False)


class Recorder(DB.IFailuresPreprocessor):
    def __init__(self, result=None, delete_warnings=True):
        self.seen: list[tuple[str, str]] = []
        self.result = result
        self.delete_warnings = delete_warnings

    def PreprocessFailures(self, accessor):
        for message in accessor.GetFailureMessages():
            self.seen.append((str(message.GetSeverity()), message.GetDescriptionText()))
            if self.delete_warnings and message.GetSeverity() == DB.FailureSeverity.Warning:
                accessor.DeleteWarning(message)
        return self.result or DB.FailureProcessingResult.Continue


@pytest.mark.provokes_thread_violation
def test_api_calls_off_the_main_thread_are_refused(revit):
    with pytest.raises(RevitExceptions.InvalidOperationException, match="API context"):
        revit.doc.GetElement(DB.ElementId(1))
    assert on_main(revit, lambda: revit.doc.GetElement(DB.ElementId(-5))) is None


def test_modifying_outside_a_transaction_throws(revit):
    with pytest.raises(RevitExceptions.ModificationOutsideTransactionException):
        on_main(revit, new_wall, revit.doc)


def test_a_nested_transaction_start_throws(revit):
    def nested():
        outer = DB.Transaction(revit.doc, "outer")
        outer.Start()
        try:
            DB.Transaction(revit.doc, "inner").Start()
        finally:
            outer.RollBack()
    with pytest.raises(RevitExceptions.InvalidOperationException, match="Starting a new transaction"):
        on_main(revit, nested)


def test_commit_returns_committed_and_fires_document_changed_with_ids_and_name(revit):
    seen = []
    revit.app.DocumentChanged += lambda sender, args: seen.append(args)

    def run():
        t = DB.Transaction(revit.doc, "add one wall")
        t.Start()
        wall = new_wall(revit.doc)
        return t.Commit(), wall.Id
    status, wall_id = on_main(revit, run)

    assert status == DB.TransactionStatus.Committed
    assert len(seen) == 1
    args = seen[0]
    assert list(args.GetTransactionNames()) == ["add one wall"]
    assert args.GetDocument() is revit.doc
    assert list(args.GetAddedElementIds()) == [wall_id]
    assert wall_id not in list(args.GetModifiedElementIds())
    assert args.GetModifiedElementIds().Count > 0  # regeneration touched views and bookkeeping
    assert str(args.Operation) == "TransactionCommitted"


def test_rollback_restores_the_document_and_fires_nothing(revit):
    seen = []
    revit.app.DocumentChanged += lambda sender, args: seen.append(args)
    before = revit.document_bytes()

    def run():
        t = DB.Transaction(revit.doc, "rolled back")
        t.Start()
        new_wall(revit.doc)
        for wall in DB.FilteredElementCollector(revit.doc).OfClass(DB.Wall):
            wall.LookupParameter("Mark").Set("x")
        return t.RollBack()
    assert on_main(revit, run) == DB.TransactionStatus.RolledBack
    assert revit.document_bytes() == before and seen == []


def test_warnings_reach_the_preprocessor_and_deleted_warnings_do_not_block(revit):
    recorder = Recorder()

    def run():
        t = DB.Transaction(revit.doc, "duplicate marks")
        options = t.GetFailureHandlingOptions()
        options.SetFailuresPreprocessor(recorder)
        t.SetFailureHandlingOptions(options)
        t.Start()
        for wall in list(DB.FilteredElementCollector(revit.doc).OfClass(DB.Wall))[:2]:
            wall.LookupParameter("Mark").Set("same")
        return t.Commit()

    assert on_main(revit, run) == DB.TransactionStatus.Committed
    assert recorder.seen == [("Warning", 'Elements have duplicate "Mark" values.')]
    assert revit.blocking_dialogs == []


def test_an_error_makes_commit_return_rolled_back_without_raising(revit):
    def updater(doc):
        doc.PostFailure(DB.FailureMessage(DB.BuiltInFailures.JoinElementsFailures.CannotJoinElementsError))
    revit.updaters.append(updater)
    before = revit.document_bytes()

    def run(preprocessor):
        t = DB.Transaction(revit.doc, "rejected")
        if preprocessor is not None:
            t.GetFailureHandlingOptions().SetFailuresPreprocessor(preprocessor).SetClearAfterRollback(True)
        t.Start()
        new_wall(revit.doc)
        return t.Commit()

    recorder = Recorder(result=DB.FailureProcessingResult.ProceedWithRollBack)
    assert on_main(revit, run, recorder) == DB.TransactionStatus.RolledBack
    assert recorder.seen == [("Error", "Can't join elements.")]
    # without a preprocessor, Revit's default (forced modal) handling would show a blocking dialog
    assert on_main(revit, run, None) == DB.TransactionStatus.RolledBack
    assert revit.blocking_dialogs == [["Can't join elements."]]
    assert revit.document_bytes() == before


def test_overlapping_walls_raise_a_warning(revit):
    recorder = Recorder(delete_warnings=False)

    def run():
        t = DB.Transaction(revit.doc, "overlap")
        t.GetFailureHandlingOptions().SetFailuresPreprocessor(recorder)
        t.Start()
        existing = next(iter(DB.FilteredElementCollector(revit.doc).OfClass(DB.Wall)))
        curve = existing.Location.Curve
        DB.Wall.Create(revit.doc, DB.Line.CreateBound(curve.GetEndPoint(0), curve.GetEndPoint(1)),
                       existing.LevelId, False)
        return t.Commit()

    assert on_main(revit, run) == DB.TransactionStatus.Committed
    assert recorder.seen and recorder.seen[0][0] == "Warning" and "overlap" in recorder.seen[0][1]
    assert len(revit.blocking_dialogs) == 1  # not deleted, forced modal handling on: a dialog


@pytest.mark.provokes_thread_violation
def test_external_event_raise_accepted_pending_denied_and_not_while_modal(revit):
    ran = threading.Event()

    class Handler(UI.IExternalEventHandler):
        def Execute(self, uiapp):
            assert threading.current_thread() is revit.thread
            ran.set()

        def GetName(self):
            return "test"

    with pytest.raises(RevitExceptions.InvalidOperationException):
        UI.ExternalEvent.Create(Handler())  # not in an API context
    event = on_main(revit, UI.ExternalEvent.Create, Handler())

    revit.open_modal_dialog()
    assert str(event.Raise()) == "Accepted"
    assert str(event.Raise()) == "Pending"
    assert not ran.wait(0.3)
    revit.close_modal_dialog()
    assert ran.wait(5)

    revit.fail_event_handlers()  # a handler that failed: Denied, and it stays Denied
    assert str(event.Raise()) == "Denied"
    assert str(event.Raise()) == "Denied"


def test_image_export_writes_a_png_with_revit_suffixed_name(revit, tmp_path):
    def run():
        view = next(v for v in DB.FilteredElementCollector(revit.doc).OfClass(DB.ViewPlan) if v.Name == "Level 2")
        options = DB.ImageExportOptions()
        options.ExportRange = DB.ExportRange.SetOfViews
        options.SetViewsAndSheets([view.Id])
        options.FilePath = os.path.join(str(tmp_path), "shot")
        options.HLRandWFViewsFileType = DB.ImageFileType.PNG
        options.FitDirection = DB.FitDirectionType.Horizontal
        options.PixelSize = 300
        revit.doc.ExportImage(options)
        return DB.ImageExportOptions.GetFileName(revit.doc, view.Id)

    predicted = on_main(revit, run)
    assert os.listdir(tmp_path) == ["shot - Floor Plan - Level 2.png"]
    assert predicted == "Floor Plan - Level 2"
    assert Image.open(tmp_path / "shot - Floor Plan - Level 2.png").size == (300, 200)


def test_views_that_cannot_be_printed_are_refused(revit, tmp_path):
    def run():
        schedule = next(iter(DB.FilteredElementCollector(revit.doc).OfClass(DB.ViewSchedule)))
        assert schedule.CanBePrinted is False
        options = DB.ImageExportOptions()
        options.ExportRange = DB.ExportRange.SetOfViews
        options.SetViewsAndSheets([schedule.Id])
        options.FilePath = os.path.join(str(tmp_path), "shot")
        revit.doc.ExportImage(options)
    with pytest.raises(RevitExceptions.ArgumentException):
        on_main(revit, run)


@pytest.mark.parametrize("version, has_value, has_integer_value", [(2023, False, True), (2024, True, True),
                                                                   (2026, True, False)])
def test_element_id_value_and_integer_value_follow_the_revit_version(version, has_value, has_integer_value):
    FakeRevit(version=version, with_document=False)
    try:
        element_id = DB.ElementId(42)
        assert (getattr(element_id, "Value", None) == 42) is has_value
        assert (getattr(element_id, "IntegerValue", None) == 42) is has_integer_value
    finally:
        FakeRevit(version=2026, with_document=False)


def test_install_replaces_the_stub_packages_and_uninstall_restores_them():
    import importlib
    import sys
    stub_autodesk = importlib.import_module("Autodesk")  # the empty package pyrevit-stubs-26 installs
    session = make_revit()
    try:
        from Autodesk.Revit import DB as imported
        assert imported is DB
    finally:
        session.stop()
        uninstall()
    assert sys.modules["Autodesk"] is stub_autodesk


@pytest.mark.provokes_thread_violation
def test_wpf_controls_refuse_changes_from_other_threads(revit, tmp_path):
    from tests.revit.fake_revit.dotnet import FakeControl
    control = revit.run_on_main(FakeControl, "TextBlock", {})
    revit.run_on_main(setattr, control, "Text", "fine on the UI thread")
    with pytest.raises(RevitExceptions.InvalidOperationException, match="different thread owns it"):
        control.Text = "from a socket thread"
    assert control.Text == "fine on the UI thread"


# --- issue 7: groups, pre-events, dialogs, modal windows, temporary isolate ---------------------------


def test_a_transaction_group_keeps_its_transactions_until_assimilated_or_rolls_them_all_back(revit):
    seen = []
    revit.app.DocumentChanged += lambda sender, args: seen.append(args)
    before = revit.document_bytes()

    def grouped(end):
        group = DB.TransactionGroup(revit.doc, "grouped")
        group.Start()
        for x in (300.0, 400.0):
            t = DB.Transaction(revit.doc, f"wall at {x}")
            t.Start()
            new_wall(revit.doc, x)
            t.Commit()
        inner = DB.Transaction(revit.doc, "left open")
        inner.Start()
        with pytest.raises(RevitExceptions.InvalidOperationException, match="while a transaction is open"):
            end(group)
        inner.RollBack()
        return end(group)

    assert on_main(revit, grouped, DB.TransactionGroup.RollBack) == DB.TransactionStatus.RolledBack
    assert revit.document_bytes() == before
    assert [str(a.Operation) for a in seen] == ["TransactionCommitted", "TransactionCommitted",
                                                "TransactionGroupRolledBack"]
    assert list(seen[2].GetTransactionNames()) == ["wall at 300.0", "wall at 400.0"]
    assert sorted(i.Value for i in seen[2].GetDeletedElementIds()) == sorted(
        i.Value for a in seen[:2] for i in a.GetAddedElementIds())

    assert on_main(revit, grouped, DB.TransactionGroup.Assimilate) == DB.TransactionStatus.Committed
    assert revit.document_bytes() != before and revit.doc._groups == []


def test_cancelled_pre_events_stop_the_operation_and_non_cancellable_ones_refuse_cancel(revit):
    annex = revit.open_background_document("Annex")
    revit.app.DocumentSaving += lambda sender, args: args.Cancel()
    with pytest.raises(RevitExceptions.OperationCanceledException):
        on_main(revit, annex.Save)
    assert annex._operations == []
    with pytest.raises(RevitExceptions.InvalidOperationException):
        DB.events.RevitAPIPreEventArgs(cancellable=False).Cancel()
    with pytest.raises(RevitExceptions.InvalidOperationException, match="active document"):
        on_main(revit, revit.doc.Close, False)

    exported = []
    revit.app.FileExporting += lambda sender, args: exported.append(str(args.Format))
    on_main(revit, annex.Export, "C:/out", "plan", [], DB.DWGExportOptions())
    assert exported == ["DWG"] and annex._operations == ["export DWG"]
    assert [d.Title for d in on_main(revit, lambda: list(revit.app.Documents))] == ["Tower A", "Annex"]


def test_dialog_box_showing_answers_only_with_a_button_the_dialog_has(revit):
    answers = []

    def answer(sender, args):
        answers.append((args.Message, args.OverrideResult(1), args.OverrideResult(2)))
    revit.uiapp.DialogBoxShowing += answer
    assert on_main(revit, revit.show_message_box, "Continue?", 1) == 2  # both accepted: the last one stands
    assert on_main(revit, UI.TaskDialog.Show, "T", "Close only") == UI.TaskDialogResult.Close
    assert answers == [("Continue?", True, True), ("Close only", False, False)]
    assert revit.task_dialogs == [("T", "Close only")]  # nobody could answer it: it would block


def test_a_modal_window_ticks_timers_and_runs_posted_clicks_but_no_external_events(revit, tmp_path):
    from tests.revit.fake_revit.dotnet import DispatcherTimer, TimeSpan
    from tests.revit.fake_revit.pyrevit_fake import WPFWindow
    xaml = tmp_path / "w.xaml"
    xaml.write_text('<Window xmlns="http://schemas.microsoft.com/winfx/2006/xaml/presentation" '
                    'xmlns:x="http://schemas.microsoft.com/winfx/2006/xaml" Title="Hi">'
                    '<Button x:Name="ok" Click="ok_click"/></Window>')
    ran = threading.Event()

    class Handler(UI.IExternalEventHandler):
        def Execute(self, uiapp):
            ran.set()

    class Window(WPFWindow):
        def __init__(self):
            WPFWindow.__init__(self, str(xaml))
            self.ticks = 0
            self.timer = DispatcherTimer()
            self.timer.Interval = TimeSpan.FromSeconds(0.02)
            self.timer.Tick += self.on_tick

        def on_tick(self, sender, args):
            self.ticks += 1

        def ok_click(self, sender, args):
            self.Close()

    event = on_main(revit, UI.ExternalEvent.Create, Handler())
    window = on_main(revit, Window)
    shown = threading.Thread(target=on_main, args=(revit, lambda: (window.timer.Start(), window.ShowDialog())))
    shown.start()
    deadline = time.monotonic() + 5
    while window.ticks < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert window.Title == "Hi" and window.ticks >= 3
    assert str(event.Raise()) == "Accepted" and not ran.wait(0.2)  # Revit is not idle under a modal window
    on_main(revit, window.ok.click)
    shown.join(5)
    assert window._closed and ran.wait(5)


def test_temporary_isolate_narrows_the_view_and_is_undone_with_its_transaction(revit):
    view = revit.active_view
    wall = next(e for e in revit.doc._elements.values() if isinstance(e, DB.Wall) and view._shows(e))

    def isolate(commit):
        t = DB.Transaction(revit.doc, "isolate")
        t.Start()
        view.IsolateElementsTemporary([wall.Id])
        shown = DB.FilteredElementCollector(revit.doc, view.Id).GetElementCount()
        (t.Commit if commit else t.RollBack)()
        return shown

    assert on_main(revit, isolate, False) == 1 and not view.IsTemporaryHideIsolateActive()
    with pytest.raises(RevitExceptions.ModificationOutsideTransactionException):
        on_main(revit, view.IsolateElementsTemporary, [wall.Id])
    on_main(revit, isolate, True)
    assert view.IsInTemporaryViewMode(DB.TemporaryViewMode.TemporaryHideIsolate)
