"""Finding the image Revit wrote: ExportImage appends the view type and name to the file name."""
import os

IMAGE_EXTENSIONS = (".png",)


def find_exported_image(folder, base_name, predicted_name=None):
    """The exported PNG in a fresh `folder`, whatever suffix Revit gave it; None when nothing was written.

    `predicted_name` is what ImageExportOptions.GetFileName returned (with or without folder/extension).
    """
    candidates = []
    if predicted_name:
        predicted = os.path.join(folder, os.path.basename(predicted_name))
        candidates.extend([predicted, predicted + ".png"])
    for path in candidates:
        if os.path.isfile(path) and path.lower().endswith(IMAGE_EXTENSIONS):
            return path
    written = sorted(name for name in os.listdir(folder)
                     if name.lower().endswith(IMAGE_EXTENSIONS) and name.startswith(base_name))
    if not written:
        written = sorted(name for name in os.listdir(folder) if name.lower().endswith(IMAGE_EXTENSIONS))
    return os.path.join(folder, written[0]) if written else None
