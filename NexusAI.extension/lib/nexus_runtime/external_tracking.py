"""DocumentChanged for the runtime's lifetime: edits made outside the agent's runs. Revit-facing.

Ignored: anything while a run is active (that is the run), and the runtime's own transactions committed
or rolled back (named "NexusAI ..."). Kept: everything else, including the person's undo or redo of a
NexusAI run, which changes the model behind the agent's back just the same.
"""
from Autodesk.Revit.DB.Events import DocumentChangedEventArgs, UndoOperation
from System import EventHandler

from nexus_runtime.guards import is_own_transaction
from nexus_runtime.ids import element_id_values


def document_key(document):
    return document.PathName or document.Title


class ExternalChangeTracker(object):
    def __init__(self, application, services, log):
        self._application = application
        self._services = services
        self._log = log
        self._delegate = None

    def start(self):
        self._delegate = EventHandler[DocumentChangedEventArgs](self._on_document_changed)
        self._application.DocumentChanged += self._delegate

    def stop(self):
        if self._delegate is not None:
            self._application.DocumentChanged -= self._delegate
            self._delegate = None

    def _on_document_changed(self, sender, args):
        try:
            if self._services.run_active:
                return
            operation = args.Operation
            undo_or_redo = operation in (UndoOperation.TransactionUndone, UndoOperation.TransactionRedone)
            if not undo_or_redo and is_own_transaction(args.GetTransactionNames()):
                return
            self._services.external.record(document_key(args.GetDocument()),
                                           element_id_values(args.GetAddedElementIds()),
                                           element_id_values(args.GetModifiedElementIds()),
                                           element_id_values(args.GetDeletedElementIds()),
                                           undo_or_redo)
        except Exception as exc:  # never let an exception escape into Revit's event dispatch
            self._log.write("DocumentChanged (between runs) handler failed: {0}".format(exc))
