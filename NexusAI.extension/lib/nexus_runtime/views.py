"""Which view to export: by name, or one that shows given elements, or the active view. Revit-facing."""
from collections import Counter

from Autodesk.Revit import DB

from nexus_runtime.ids import element_id_value

_LISTED_VIEWS = 15


def exportable(view):
    return view is not None and not view.IsTemplate and view.CanBePrinted


def all_views(doc):
    return [v for v in DB.FilteredElementCollector(doc).OfClass(DB.View) if not v.IsTemplate]


def find_view(doc, name):
    """A view whose name (or title, e.g. 'Floor Plan: Level 1') is `name`; floor plans win ties."""
    views = all_views(doc)
    for matches in ([v for v in views if v.Name == name],
                    [v for v in views if _title(v) == name],
                    [v for v in views if v.Name.lower() == name.lower()]):
        if matches:
            matches.sort(key=lambda v: 0 if v.ViewType == DB.ViewType.FloorPlan else 1)
            return matches[0]
    return None


def _title(view):
    try:
        return view.Title
    except Exception:
        return view.Name


def view_showing(doc, active_view, element_ids):
    """The active view if it shows any of the elements, else a plan of their most common level, else 3D."""
    wanted = set(element_ids)
    if exportable(active_view) and _shows_any(doc, active_view, wanted):
        return active_view
    levels = Counter()
    for element_id in element_ids:
        element = doc.GetElement(DB.ElementId(element_id))
        if element is not None and element.LevelId != DB.ElementId.InvalidElementId:
            levels[element_id_value(element.LevelId)] += 1
    views = all_views(doc)
    for level_value, _count in levels.most_common():
        for view in views:
            if view.ViewType == DB.ViewType.FloorPlan and exportable(view) \
                    and element_id_value(view.GenLevel.Id) == level_value:
                return view
    for view in views:
        if view.ViewType == DB.ViewType.ThreeD and exportable(view):
            return view
    return None


def _shows_any(doc, view, wanted):
    for element_id in DB.FilteredElementCollector(doc, view.Id).ToElementIds():
        if element_id_value(element_id) in wanted:
            return True
    return False


def resolve_view(doc, active_view, name, element_ids):
    """(view, None) or (None, message for the model)."""
    if name:
        view = find_view(doc, name)
        if view is None:
            names = sorted(v.Name for v in all_views(doc) if exportable(v))
            listed = ", ".join(names[:_LISTED_VIEWS]) + (" ..." if len(names) > _LISTED_VIEWS else "")
            return None, "No view named '{0}'. Views that can be exported: {1}".format(name, listed)
        return view, None
    if element_ids:
        view = view_showing(doc, active_view, element_ids)
        if view is not None:
            return view, None
    if active_view is None:
        return None, "Revit has no active view."
    return active_view, None
