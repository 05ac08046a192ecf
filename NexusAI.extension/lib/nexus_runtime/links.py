"""links: the Revit models linked into the active document, the references of a federated Revit session.

Scripts see `links`, read-only: name -> LinkedModel {name, document, transform, instance_id}, where `document` is
the linked Document (`RevitLinkInstance.GetLinkDocument()`) and `transform` its placement in the host
(`GetTotalTransform()`; `to_host(point)` maps a point of the link into the host's coordinates). A link that is not
loaded, or whose document Revit cannot give, is not among them: `links.unavailable` says which and why, so a
script can tell the person. Revit itself refuses to change a linked document (no transaction starts in one), and
the run guards fail a run that changed any document but the active one. Revit-facing (IronPython 2.7).
"""
from Autodesk.Revit import DB

NOT_LOADED = "not loaded (Manage Links > Reload to use it)"
NO_DOCUMENT = "Revit gives no document for it"


class LinkedModel(object):
    """One loaded link: its document, read-only, and where it sits in the host."""

    def __init__(self, name, document, transform, instance_id):
        self.name = name
        self.document = document
        self.transform = transform
        self.instance_id = instance_id

    def to_host(self, point):
        """A point (DB.XYZ) of the linked model in the host document's coordinates."""
        return self.transform.OfPoint(point)

    def __repr__(self):
        return "<linked model {0!r} (read-only)>".format(self.name)


class Links(object):
    """A read-only mapping of link name -> LinkedModel, with `unavailable` (name -> why)."""

    def __init__(self, models, unavailable):
        self._models = models
        self.unavailable = unavailable

    def __getitem__(self, name):
        if name not in self._models:
            why = self.unavailable.get(name)
            if why:
                raise KeyError("the link {0!r} is {1}".format(name, why))
            raise KeyError("no linked model {0!r}; loaded links: {1}".format(
                name, ", ".join(sorted(self._models)) or "none"))
        return self._models[name]

    def __contains__(self, name):
        return name in self._models

    def __iter__(self):
        return iter(sorted(self._models))

    def __len__(self):
        return len(self._models)

    def keys(self):
        return sorted(self._models)

    def values(self):
        return [self._models[name] for name in sorted(self._models)]

    def items(self):
        return [(name, self._models[name]) for name in sorted(self._models)]

    def get(self, name, default=None):
        return self._models.get(name, default)

    def __repr__(self):
        return "<linked models (read-only): {0}>".format(", ".join(sorted(self._models)) or "none")


def collect_links(doc):
    """Every RevitLinkInstance of `doc`, as Links. Two instances of one linked file get `Title`, `Title (2)`..."""
    models, unavailable = {}, {}
    instances = list(DB.FilteredElementCollector(doc).OfClass(DB.RevitLinkInstance))
    for instance in instances:
        try:
            document = instance.GetLinkDocument()
        except Exception:  # Revit raises for a link it cannot open: treated as no document
            document = None
            reason = NO_DOCUMENT
        else:
            reason = NOT_LOADED
        base = document.Title if document is not None else (instance.Name or "link")
        name = _unique(base, models, unavailable)
        if document is None:
            unavailable[name] = reason
            continue
        models[name] = LinkedModel(name, document, instance.GetTotalTransform(), instance.Id)
    return Links(models, unavailable)


def _unique(base, *taken):
    name, number = base, 2
    while any(name in names for names in taken):
        name = "{0} ({1})".format(base, number)
        number += 1
    return name
