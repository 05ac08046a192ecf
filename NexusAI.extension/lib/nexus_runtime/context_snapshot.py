"""context: a cheap snapshot of what the person has open (document, levels, active view, selection,
counts of common categories), for the context block at the start of a run. Revit-facing.

Counting uses one category filter per category, which Revit answers from its indexes: no pass over every
element of a large model on the main thread.
"""
from Autodesk.Revit import DB

from nexus_runtime import protocol
from nexus_runtime.ids import element_id_value, element_id_values
from nexus_runtime.links import collect_links

COUNTED_CATEGORIES = (
    ("Walls", "OST_Walls"), ("Doors", "OST_Doors"), ("Windows", "OST_Windows"), ("Floors", "OST_Floors"),
    ("Roofs", "OST_Roofs"), ("Ceilings", "OST_Ceilings"), ("Rooms", "OST_Rooms"), ("Stairs", "OST_Stairs"),
    ("Columns", "OST_Columns"), ("Structural Columns", "OST_StructuralColumns"),
    ("Structural Framing", "OST_StructuralFraming"), ("Furniture", "OST_Furniture"),
    ("Generic Models", "OST_GenericModel"), ("Grids", "OST_Grids"), ("Sheets", "OST_Sheets"),
)
MAX_SELECTION = 200


def describe(uiapp, message):
    request_id = message["request_id"]
    uidoc = uiapp.ActiveUIDocument
    if uidoc is None:
        return protocol.context_error(request_id, "No Revit document is open.")
    doc = uidoc.Document
    application = uiapp.Application
    levels = sorted(DB.FilteredElementCollector(doc).OfClass(DB.Level), key=lambda level: level.Elevation)
    active_view = uidoc.ActiveView
    context = {
        "document": doc.Title,
        "host_version": "Revit {0} ({1})".format(application.VersionNumber, application.VersionBuild),
        "levels": [{"name": level.Name, "elevation": round(level.Elevation, 4), "id": element_id_value(level.Id)}
                   for level in levels],
        "active_view": active_view.Name if active_view is not None else None,
        "selection": element_id_values(uidoc.Selection.GetElementIds())[:MAX_SELECTION],
        "counts": _counts(doc),
        "units": {"length": "foot (Revit API internal unit; level elevations are in feet)", "angle": "radian"},
    }
    links = collect_links(doc)
    if len(links) or links.unavailable:
        context["links"] = {"loaded": links.keys(), "unavailable": links.unavailable}
    return protocol.context_ok(request_id, context)


def _counts(doc):
    counts = {}
    for label, name in COUNTED_CATEGORIES:
        category = getattr(DB.BuiltInCategory, name, None)
        if category is None:
            continue
        count = DB.FilteredElementCollector(doc).OfCategory(category).WhereElementIsNotElementType().GetElementCount()
        if count:
            counts[label] = count
    return counts
