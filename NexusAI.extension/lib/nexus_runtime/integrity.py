"""After a rollback, check that no earlier commit was lost. Revit-facing.

Before a run: the document's element count and which of the elements the last kept change touched
still exist. A rollback restores the document to exactly that state, so after one both must still hold;
if not, something older than this run was undone too (a group that swallowed an earlier transaction,
another add-in), and the run reports it instead of staying silent.
"""
from Autodesk.Revit import DB


def element_count(document):
    instances = DB.FilteredElementCollector(document).WhereElementIsNotElementType().GetElementCount()
    types = DB.FilteredElementCollector(document).WhereElementIsElementType().GetElementCount()
    return instances + types


class CommitCheck(object):
    def __init__(self, count, present_ids):
        self.count = count
        self.present_ids = present_ids

    @classmethod
    def capture(cls, document, kept_ids):
        present = [i for i in kept_ids if document.GetElement(DB.ElementId(i)) is not None]
        return cls(element_count(document), present)

    def problems(self, document):
        """[] when the document is as it was before the run; else what was lost, for the result."""
        found = []
        missing = [i for i in self.present_ids if document.GetElement(DB.ElementId(i)) is None]
        if missing:
            found.append("elements of the last kept change are gone after the rollback: {0}".format(
                ", ".join(str(i) for i in missing[:20])))
        count = element_count(document)
        if count != self.count:
            found.append("the document had {0} elements before the run and {1} after the rollback".format(
                self.count, count))
        return found
