"""While a held change waits for the person: its elements selected and temporarily isolated in the active
view, and everything put back afterwards. Revit-facing (main thread).

Only elements the active view actually shows are selected and isolated (isolating elements a view does
not show would blank it). The isolate runs in a small transaction inside the held TransactionGroup, so a
Discard rolls it back with the change and a Keep assimilates it together with its restore (temporary
view modes are not part of the model either way). A view already in temporary hide/isolate is left as
the person set it; a view that cannot isolate (a schedule, a sheet) only gets the selection, and so does
Revit with no active document: nothing.
"""
from Autodesk.Revit import DB
from System.Collections.Generic import List

from nexus_runtime.guards import OWN_NAME_PREFIX
from nexus_runtime.ids import element_id_value, element_id_values

ISOLATE_NAME = OWN_NAME_PREFIX + "review: show the held change"
RESTORE_NAME = OWN_NAME_PREFIX + "review: restore the view"


class ReviewHighlight(object):
    def __init__(self, uidoc, element_ids, log):
        self._uidoc = uidoc  # None: no document is active in Revit's window (nothing to highlight)
        self._document = uidoc.Document if uidoc is not None else None
        self._wanted = set(int(i) for i in element_ids)
        self._log = log
        self._previous_selection = None
        self._view = None
        self.selected = 0
        self.isolated = False
        self.not_isolable = None  # the active view's name when it cannot isolate (a schedule, a sheet)

    def apply(self):
        if self._uidoc is None:
            return self
        try:
            view = self._uidoc.ActiveView
            shown = self._shown_in(view)
            if not shown:
                return self
            ids = List[DB.ElementId]([DB.ElementId(i) for i in shown])
            self._previous_selection = element_id_values(self._uidoc.Selection.GetElementIds())
            self._uidoc.Selection.SetElementIds(ids)
            self.selected = len(shown)
            if not view.CanUseTemporaryVisibilityModes():
                self.not_isolable = view.Name
            elif not view.IsTemporaryHideIsolateActive():
                self._in_transaction(ISOLATE_NAME, lambda: view.IsolateElementsTemporary(ids))
                self._view = view
                self.isolated = True
            self._uidoc.RefreshActiveView()
        except Exception as exc:  # the review works without the highlight
            self._log.write("could not highlight the held change: {0}".format(exc))
        return self

    def restore(self):
        """Put the selection and the view back; each on its own, so one failing does not keep the other."""
        if self._uidoc is None:
            return
        if self._previous_selection is not None:
            try:  # elements the change deleted (or anyone deleted meanwhile) cannot be selected again
                still_there = [i for i in self._previous_selection
                               if self._document.GetElement(DB.ElementId(i)) is not None]
                self._uidoc.Selection.SetElementIds(List[DB.ElementId]([DB.ElementId(i) for i in still_there]))
            except Exception as exc:
                self._log.write("could not restore the selection after the review: {0}".format(exc))
        if self.isolated and self._view is not None:
            view = self._view
            try:
                self._in_transaction(RESTORE_NAME,
                                     lambda: view.DisableTemporaryViewMode(DB.TemporaryViewMode.TemporaryHideIsolate))
                self.isolated = False
            except Exception as exc:
                self._log.write("could not reset the isolation after the review: {0}".format(exc))
        try:
            self._uidoc.RefreshActiveView()
        except Exception as exc:
            self._log.write("could not refresh the view after the review: {0}".format(exc))

    def _shown_in(self, view):
        if view is None or view.IsTemplate or not self._wanted:
            return []
        visible = element_id_values(DB.FilteredElementCollector(self._document, view.Id).ToElementIds())
        return sorted(i for i in visible if i in self._wanted and i != element_id_value(view.Id))

    def _in_transaction(self, name, change):
        transaction = DB.Transaction(self._document, name)
        try:
            transaction.Start()
            change()
            transaction.Commit()
        finally:
            if transaction.GetStatus() == DB.TransactionStatus.Started:
                transaction.RollBack()
            transaction.Dispose()
