"""export_view: a PNG of one view through ImageExportOptions, fitted to max_px. Revit-facing."""
import base64
import io
import os
import shutil
import tempfile

from Autodesk.Revit import DB
from System.Collections.Generic import List

from nexus_runtime import protocol, views
from nexus_runtime.image_files import find_exported_image
from nexus_runtime.png import fit_direction, png_size

BASE_NAME = "nexus_view"


def export_view(uiapp, message, log):
    request_id = message["request_id"]
    uidoc = uiapp.ActiveUIDocument
    if uidoc is None:
        return protocol.export_view_error(request_id, "No Revit document is open.")
    doc = uidoc.Document
    view, problem = views.resolve_view(doc, uidoc.ActiveView, message.get("view"), message.get("element_ids") or [])
    if view is None:
        return protocol.export_view_error(request_id, problem)
    if view.IsTemplate or not view.CanBePrinted:
        return protocol.export_view_error(request_id, (
            "The view '{0}' cannot be exported as an image (Revit cannot print it: schedules, view templates "
            "and some other views). Ask for a plan, section, elevation or 3D view instead.").format(view.Name))
    max_px = int(message["max_px"])
    direction = _fit_direction(view)
    data = _export_png(doc, view, direction, max_px)
    width, height = png_size(data)
    if max(width, height) > max_px:
        # the outline and the printed extent disagree: shrink the bounded side to bring the longer one in
        pixel_size = max(16, int(max_px * max_px / float(max(width, height))))
        data = _export_png(doc, view, direction, pixel_size)
        width, height = png_size(data)
    encoded = base64.b64encode(data)
    if not isinstance(encoded, str):
        encoded = encoded.decode("ascii")
    return protocol.export_view_ok(request_id, encoded, width, height, view.Name)


def _fit_direction(view):
    try:
        outline = view.Outline
        width = outline.Max.U - outline.Min.U
        height = outline.Max.V - outline.Min.V
    except Exception:
        return DB.FitDirectionType.Horizontal
    if fit_direction(width, height) == "Vertical":
        return DB.FitDirectionType.Vertical
    return DB.FitDirectionType.Horizontal


def _export_png(doc, view, direction, pixel_size):
    folder = tempfile.mkdtemp(prefix="nexus-export-")  # fresh each time: no stale file can be picked up
    try:
        options = DB.ImageExportOptions()
        options.ExportRange = DB.ExportRange.SetOfViews
        options.SetViewsAndSheets(List[DB.ElementId]([view.Id]))
        options.FilePath = os.path.join(folder, BASE_NAME)
        options.HLRandWFViewsFileType = DB.ImageFileType.PNG
        options.ShadowViewsFileType = DB.ImageFileType.PNG
        options.ZoomType = DB.ZoomFitType.FitToPage
        options.FitDirection = direction
        options.PixelSize = int(pixel_size)
        options.ImageResolution = DB.ImageResolution.DPI_150
        predicted = DB.ImageExportOptions.GetFileName(doc, view.Id)
        doc.ExportImage(options)
        path = find_exported_image(folder, BASE_NAME, predicted)
        if path is None:
            raise IOError("Revit reported no error but wrote no image for view '{0}'".format(view.Name))
        with io.open(path, "rb") as handle:
            return handle.read()
    finally:
        shutil.rmtree(folder, True)
