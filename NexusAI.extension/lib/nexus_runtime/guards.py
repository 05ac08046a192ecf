"""Guards around one run, from the moment its job starts until its result is built (a hold included).
Revit-facing.

- Save, save-as, close, sync with central and exports of the documents open at the start are cancelled
  (their pre-events are cancellable) and listed in the result's `blocked`.
- A change to any other open document fails the run: every other document that can be changed gets a
  TransactionGroup for the run's duration, always rolled back at the end, so what a script did there is
  undone; DocumentChanged on another document marks the run failed.
- Revit dialogs (DialogBoxShowing) are dismissed without accepting what they propose, and listed in the
  result's `dialogs`.
The runtime's own image export (export_view served during a hold) is let through.
"""
from contextlib import contextmanager

from Autodesk.Revit import DB
from Autodesk.Revit.DB.Events import (
    DocumentChangedEventArgs,
    DocumentClosingEventArgs,
    DocumentSavingAsEventArgs,
    DocumentSavingEventArgs,
    DocumentSynchronizingWithCentralEventArgs,
    FileExportingEventArgs,
)
from Autodesk.Revit.UI.Events import DialogBoxShowingEventArgs
from System import EventHandler

from nexus_runtime.guard_log import dismissal_codes

OWN_NAME_PREFIX = "NexusAI "  # every transaction and group the runtime opens is named so
GUARD_GROUP_NAME = OWN_NAME_PREFIX + "guard (changes here are rolled back)"
PRE_EVENTS = (
    ("DocumentSaving", DocumentSavingEventArgs),
    ("DocumentSavingAs", DocumentSavingAsEventArgs),
    ("DocumentClosing", DocumentClosingEventArgs),
    ("DocumentSynchronizingWithCentral", DocumentSynchronizingWithCentralEventArgs),
    ("FileExporting", FileExportingEventArgs),
)


def is_own_transaction(names):
    names = list(names)
    return bool(names) and all(str(name).startswith(OWN_NAME_PREFIX) for name in names)


class RunGuard(object):
    def __init__(self, uiapp, run_document, guard_log, log):
        self._uiapp = uiapp
        self._application = uiapp.Application
        self._run_document = run_document
        self._record = guard_log
        self._log = log
        self._documents = []
        self._subscriptions = []  # (event source, event name, delegate): removing needs the same delegate
        self._groups = []
        self._own_export = False

    def __enter__(self):
        self._documents = list(self._application.Documents)
        try:
            for name, args_type in PRE_EVENTS:
                self._subscribe(self._application, name, EventHandler[args_type](self._pre_event_handler(name)))
            self._subscribe(self._application, "DocumentChanged",
                            EventHandler[DocumentChangedEventArgs](self._on_document_changed))
            self._subscribe(self._uiapp, "DialogBoxShowing",
                            EventHandler[DialogBoxShowingEventArgs](self._on_dialog))
            self._protect_other_documents()
        except Exception:
            self._release()
            raise
        return self

    def __exit__(self, kind, value, traceback):
        self._release()
        return False

    @contextmanager
    def allowing_own_export(self):
        self._own_export = True
        try:
            yield self
        finally:
            self._own_export = False

    # setup and teardown -------------------------------------------------------------------------------

    def _subscribe(self, source, name, delegate):
        event = getattr(source, name)
        event += delegate  # IronPython: adds the handler to the .NET event
        self._subscriptions.append((source, name, delegate))

    def _protect_other_documents(self):
        for document in self._documents:
            if document.Equals(self._run_document) or document.IsLinked or document.IsReadOnly \
                    or document.IsModifiable:
                continue
            group = DB.TransactionGroup(document, GUARD_GROUP_NAME)
            try:
                if group.Start() == DB.TransactionStatus.Started:
                    self._groups.append(group)
            except Exception as exc:  # a document in a state that takes no group cannot be changed either
                self._log.write("no guard group on '{0}': {1}".format(document.Title, exc))

    def _release(self):
        for group in reversed(self._groups):
            try:
                if group.GetStatus() == DB.TransactionStatus.Started:
                    group.RollBack()
            except Exception as exc:
                self._log.write("could not roll back the guard group: {0}".format(exc))
        self._groups = []
        for source, name, delegate in reversed(self._subscriptions):
            event = getattr(source, name)
            event -= delegate
        self._subscriptions = []

    # handlers (main thread; never let an exception escape into Revit) ------------------------------

    def _guarded(self, document):
        return any(document.Equals(open_document) for open_document in self._documents)

    def _pre_event_handler(self, event_name):
        def handle(sender, args):
            try:
                if event_name == "FileExporting" and self._own_export:
                    return
                document = args.Document
                if document is None or not self._guarded(document):
                    return
                detail = str(args.Format) if event_name == "FileExporting" else None
                cancelled = False
                if args.Cancellable:
                    args.Cancel()
                    cancelled = True
                self._record.blocked(event_name, document.Title, detail, cancelled)
            except Exception as exc:
                self._log.write("{0} guard failed: {1}".format(event_name, exc))
        return handle

    def _on_document_changed(self, sender, args):
        try:
            document = args.GetDocument()
            if document.Equals(self._run_document) or is_own_transaction(args.GetTransactionNames()):
                return
            self._record.other_document_changed(document.Title)
        except Exception as exc:
            self._log.write("DocumentChanged guard failed: {0}".format(exc))

    def _on_dialog(self, sender, args):
        try:
            message = getattr(args, "Message", None)
            dialog_type = getattr(args, "DialogType", None)
            codes = dismissal_codes(dialog_type, is_task_dialog=message is not None and dialog_type is None)
            answered = None
            for code in codes:
                if args.OverrideResult(code):
                    answered = code
                    break
            self._record.dialog(message or "Revit dialog {0}".format(args.DialogId), answered is not None, answered)
        except Exception as exc:
            self._log.write("dialog guard failed: {0}".format(exc))
