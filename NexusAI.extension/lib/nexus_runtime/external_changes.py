"""Edits made to a document outside the agent's runs (by the person, another add-in, an undo), kept per
document until the next execute_result on that document reports them once as `external_changes`.

Plain Python: the Revit-facing DocumentChanged subscriber (external_tracking.py) feeds it.
"""
import threading

from nexus_runtime.changes import ChangeSet

MAX_LISTED_IDS = 1000  # per list; the summary still counts them all


class ExternalChanges(object):
    def __init__(self, max_listed_ids=MAX_LISTED_IDS):
        self._max = max_listed_ids
        self._by_document = {}  # document key -> (ChangeSet, undo/redo seen)
        self._lock = threading.Lock()

    def record(self, document_key, added, modified, deleted, undo_or_redo=False):
        with self._lock:
            changes, undone = self._by_document.get(document_key, (None, False))
            if changes is None:
                changes = ChangeSet()
            changes.record(added, modified, deleted)
            self._by_document[document_key] = (changes, undone or bool(undo_or_redo))

    def take(self, document_key, document_title):
        """The `external_changes` field for the next result on this document (None: nothing), and reset."""
        with self._lock:
            changes, undone = self._by_document.pop(document_key, (None, False))
        if changes is None or changes.is_empty():
            return None
        sets = changes.as_message()
        report = {"summary": summary(sets, document_title, undone)}
        for key in ("added", "modified", "deleted"):
            if sets[key]:
                report[key] = sets[key][:self._max]
        return report


def summary(sets, document_title, undone=False):
    """'3 elements modified, 1 added in 'Tower A' by the person since the last run'."""
    parts = []
    for key in ("modified", "added", "deleted"):
        count = len(sets.get(key) or [])
        if count:
            parts.append((count, key))
    pieces = []
    for count, key in parts:
        if not pieces:
            pieces.append("{0} {1} {2}".format(count, "element" if count == 1 else "elements", key))
        else:
            pieces.append("{0} {1}".format(count, key))
    text = ", ".join(pieces) if pieces else "no elements changed"
    text += " in '{0}' by the person since the last run".format(document_title)
    if undone:
        text += " (including undo or redo)"
    return text
