"""show_elements: select the asked elements and zoom to them (the pane's "Show in Revit"). Revit-facing
(main thread, through the ExternalEvent like every job).

Elements deleted since the result was reported are left out and named; when Revit finds no view that can
show the rest (UIDocument.ShowElements raises), they stay selected and the reply says they were not zoomed to.
"""
from Autodesk.Revit import DB
from System.Collections.Generic import List

from nexus_runtime import protocol
from nexus_runtime.element_display import NO_DOCUMENT, nothing_left, split_existing


def show_elements(uiapp, message, log):
    request_id = message["request_id"]
    uidoc = uiapp.ActiveUIDocument
    if uidoc is None:
        return protocol.show_elements_error(request_id, NO_DOCUMENT)
    doc = uidoc.Document
    present, missing = split_existing(message["element_ids"],
                                      lambda value: doc.GetElement(DB.ElementId(value)) is not None)
    if not present:
        return protocol.show_elements_error(request_id, nothing_left(missing, doc.Title), missing)
    ids = List[DB.ElementId]([DB.ElementId(value) for value in present])
    uidoc.Selection.SetElementIds(ids)
    zoom_problem = None
    try:
        uidoc.ShowElements(ids)
    except Exception as exc:  # no view can show them: they stay selected
        zoom_problem = str(exc) or type(exc).__name__
        log.write("Show in Revit: selected {0} element(s) but could not zoom to them: {1}".format(
            len(present), zoom_problem))
    view = uidoc.ActiveView
    reply = protocol.show_elements_result(request_id, present, missing, zoom_problem is None,
                                          view.Name if view is not None else None, doc.Title)
    if zoom_problem:
        reply["note"] = zoom_problem
    return reply
