"""The warnings and errors Revit raised while a transaction was committing, as `failures` entries."""


class FailureLog(object):
    """Collects failure messages; the same message seen twice keeps one entry and merges element ids."""

    def __init__(self, max_entries=200):
        self._entries = []
        self._index = {}
        self._max_entries = max_entries
        self.dropped = 0

    def record(self, severity, message, element_ids=None):
        severity = "error" if severity == "error" else "warning"
        key = (severity, message)
        ids = [int(i) for i in (element_ids or [])]
        if key in self._index:
            entry = self._index[key]
            known = set(entry.get("element_ids", []))
            merged = entry.get("element_ids", []) + [i for i in ids if i not in known]
            if merged:
                entry["element_ids"] = merged
            return
        if len(self._entries) >= self._max_entries:
            self.dropped += 1
            return
        entry = {"severity": severity, "message": message}
        if ids:
            entry["element_ids"] = ids
        self._entries.append(entry)
        self._index[key] = entry

    def has_errors(self):
        return any(entry["severity"] == "error" for entry in self._entries)

    def entries(self):
        entries = [dict(entry) for entry in self._entries]
        if self.dropped:
            entries.append({"severity": "warning",
                            "message": "{0} further failure message(s) not listed".format(self.dropped)})
        return entries

    def summary(self):
        errors = [e["message"] for e in self._entries if e["severity"] == "error"]
        return "; ".join(errors[:3])
