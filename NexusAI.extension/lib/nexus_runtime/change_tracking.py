"""DocumentChanged, subscribed only around our own transaction and filtered to it. Revit-facing."""
from Autodesk.Revit.DB.Events import DocumentChangedEventArgs, UndoOperation
from System import EventHandler

from nexus_runtime.ids import element_id_values


class DocumentChangeTracker(object):
    """with DocumentChangeTracker(app, doc, name, changeset, log): ... commit ...

    Records into `changeset` the ids of the commit of the transaction named `name` in `doc`; events of
    other documents, other transactions, undo and redo are ignored.
    """

    def __init__(self, application, document, transaction_name, changeset, log):
        self._application = application
        self._document = document
        self._transaction_name = transaction_name
        self._changeset = changeset
        self._log = log
        self._delegate = None  # kept: removing needs the very delegate that was added

    def __enter__(self):
        self._delegate = EventHandler[DocumentChangedEventArgs](self._on_document_changed)
        self._application.DocumentChanged += self._delegate
        return self

    def __exit__(self, kind, value, traceback):
        self._application.DocumentChanged -= self._delegate
        self._delegate = None
        return False

    def _on_document_changed(self, sender, args):
        try:
            if args.Operation != UndoOperation.TransactionCommitted:
                return
            if not args.GetDocument().Equals(self._document):
                return
            if self._transaction_name not in list(args.GetTransactionNames()):
                return
            self._changeset.record(element_id_values(args.GetAddedElementIds()),
                                   element_id_values(args.GetModifiedElementIds()),
                                   element_id_values(args.GetDeletedElementIds()))
        except Exception as exc:  # never let an exception escape into Revit's event dispatch
            self._log.write("DocumentChanged handler failed: {0}".format(exc))
