"""Merging the DocumentChanged events of one run into one added / modified / deleted set.

Rules: an element added and then deleted in the same run never existed for the report; "modified"
never lists an element that was added or deleted; ids are plain ints.
"""


class ChangeSet(object):
    def __init__(self):
        self._added = set()
        self._modified = set()
        self._deleted = set()

    def record(self, added, modified, deleted):
        for element_id in added:
            element_id = int(element_id)
            self._deleted.discard(element_id)
            self._modified.discard(element_id)
            self._added.add(element_id)
        for element_id in modified:
            element_id = int(element_id)
            if element_id not in self._added and element_id not in self._deleted:
                self._modified.add(element_id)
        for element_id in deleted:
            element_id = int(element_id)
            self._modified.discard(element_id)
            if element_id in self._added:
                self._added.discard(element_id)
            else:
                self._deleted.add(element_id)

    def is_empty(self):
        return not (self._added or self._modified or self._deleted)

    def as_message(self):
        return {
            "added": sorted(self._added),
            "modified": sorted(self._modified),
            "deleted": sorted(self._deleted),
        }
