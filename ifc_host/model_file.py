"""Opening IFC files with a check that they are whole, and saving them atomically.

`ifcopenshell.open` loads a truncated file without raising (it keeps what it could parse), so every open
goes through the parser's log: an error logged while parsing means the file is damaged.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import ifcopenshell
import ifcopenshell.ifcopenshell_wrapper as wrapper

STEP_TRAILER = b"END-ISO-10303-21;"
_PARSER_MESSAGES_SHOWN = 3


class BadModelError(ValueError):
    """The file is not a usable IFC model; the message says why, for a person to read."""


def open_checked(path: str | os.PathLike[str]) -> ifcopenshell.file:
    """Open an IFC-SPF file, refusing empty, garbage, truncated or project-less files with a clear message."""
    file_path = Path(path)
    if not file_path.is_file():
        raise BadModelError(f"{file_path}: no such file")
    size = file_path.stat().st_size
    if size == 0:
        raise BadModelError(f"{file_path}: the file is empty (0 bytes); expected an IFC model")
    logger = wrapper.logger()
    logger.output_format(wrapper.logger.FMT_INMEMORY)
    try:
        model = ifcopenshell.open(str(file_path), logger=logger)
    except (ifcopenshell.Error, OSError, RuntimeError) as exc:
        raise BadModelError(f"{file_path}: not a readable IFC file ({exc})") from exc
    if logger.max_severity() >= wrapper.logger.LOG_ERROR:
        raise BadModelError(f"{file_path}: the IFC file is damaged or truncated: {_parser_errors(logger)}")
    if not _has_trailer(file_path, size):
        raise BadModelError(f"{file_path}: the IFC file is truncated (it does not end with {STEP_TRAILER.decode()})")
    if not model.by_type("IfcProject"):
        raise BadModelError(f"{file_path}: the file parses but holds no IfcProject, so it is not an IFC model")
    # The native file keeps logging to this logger for its whole life (e.g. while attributes are set);
    # letting Python free it would leave the file writing into freed memory.
    model._nexus_parse_logger = logger
    return model


def _parser_errors(logger: Any) -> str:
    errors = [m.message for m in logger.log_messages() if m.severity >= wrapper.logger.LOG_ERROR]
    shown = "; ".join(errors[:_PARSER_MESSAGES_SHOWN])
    more = len(errors) - _PARSER_MESSAGES_SHOWN
    return shown + (f" (and {more} more)" if more > 0 else "") if errors else "the parser reported errors"


def _has_trailer(path: Path, size: int) -> bool:
    with path.open("rb") as handle:
        handle.seek(max(0, size - 4096))
        return handle.read().rstrip().endswith(STEP_TRAILER)


def describe_document(model: ifcopenshell.file, path: str | os.PathLike[str]) -> dict[str, Any]:
    """The `document` block of the host's hello: title, schema, path and the storeys (the views)."""
    projects = model.by_type("IfcProject")
    title = (projects[0].Name if projects and projects[0].Name else None) or Path(path).stem or "IFC model"
    storeys = sorted(model.by_type("IfcBuildingStorey"), key=lambda s: (_elevation(s), s.id()))
    return {
        "title": title,
        "schema": model.schema_identifier,
        "path": str(Path(path).resolve()),
        "storeys": [s.Name or f"#{s.id()}" for s in storeys][:100],
        "entities": len(model.entity_names()),
    }


def describe_context(model: ifcopenshell.file) -> dict[str, Any]:
    """The snapshot a `context` request asks for: storeys with elevations, element counts, length unit."""
    import ifcopenshell.util.unit

    storeys = sorted(model.by_type("IfcBuildingStorey"), key=lambda s: (_elevation(s), s.id()))
    counts: dict[str, int] = {}
    for product in model.by_type("IfcProduct"):
        counts[product.is_a()] = counts.get(product.is_a(), 0) + 1
    projects = model.by_type("IfcProject")
    context: dict[str, Any] = {
        "document": (projects[0].Name if projects and projects[0].Name else None) or "IFC model",
        "host_version": f"IfcOpenShell {ifcopenshell.version}",
        "levels": [{"name": s.Name or f"#{s.id()}", "elevation": _elevation(s), "id": s.id()} for s in storeys],
        "active_view": None,
        "selection": [],
        "counts": counts,
    }
    unit = ifcopenshell.util.unit.get_project_unit(model, "LENGTHUNIT")
    if unit is not None:
        name = getattr(unit, "Name", None) or "unknown"
        prefix = getattr(unit, "Prefix", None) or ""
        context["units"] = {"length": f"{prefix}{name}".lower()}
    return context


def _elevation(storey: ifcopenshell.entity_instance) -> float:
    try:
        return float(storey.Elevation or 0.0)
    except (TypeError, ValueError):
        return 0.0


def temp_path_beside(target: str | os.PathLike[str]) -> Path:
    """A fresh temporary file in the target's directory, so that os.replace onto the target is atomic."""
    target_path = Path(target)
    fd, name = tempfile.mkstemp(prefix=f".{target_path.name}.", suffix=".tmp", dir=target_path.parent)
    os.close(fd)
    return Path(name)


def fsync_file(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_atomically(written: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Move a fully written (and fsynced) file onto the target, then make the rename itself durable."""
    os.replace(written, target)
    directory = os.open(Path(target).parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def save_atomically(model: ifcopenshell.file, target: str | os.PathLike[str]) -> None:
    """Write the model to a temporary file beside the target, fsync it, then rename it over the target."""
    temp = temp_path_beside(target)
    try:
        model.write(str(temp))
        fsync_file(temp)
        replace_atomically(temp, target)
    finally:
        temp.unlink(missing_ok=True)
