"""Opening IFC files with a check that they are whole, and saving them atomically.

`ifcopenshell.open` loads a truncated file without raising (it keeps what it could parse), so every open
goes through the parser's log. Errors that other tools shrug off (a reference to an instance that is not in
the file, an entity the schema does not know) are recoverable: the file opens, and the problems travel with
the model as warnings (host log, `hello`, the model's context). Any other parser error, a missing trailer or
a missing IfcProject means the file is damaged or not IFC, and it is refused.

Saving writes through a symlinked path to its target, keeps the file's permissions, and refuses to replace
a file that changed on disk since this host last read or wrote it (another host or program saved it).
"""
from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ifcopenshell
import ifcopenshell.ifcopenshell_wrapper as wrapper

from ifc_host.file_identity import BadModelError
from ifc_host.spatial import storey_labels

STEP_TRAILER = b"END-ISO-10303-21;"
_PARSER_MESSAGES_SHOWN = 3
WARNINGS_SHOWN = 20
_RECOVERABLE = (
    re.compile(r"^Instance reference #\d+ used by instance #\d+ at attribute index \d+ not found"),
    re.compile(r"^Entity with name '(?!ENDSEC'|END-ISO|HEADER'|DATA')[A-Za-z0-9_]+' not found in schema"),
    # A value outside the schema's enumeration (e.g. an IFC 4.3 draft's literal): IfcOpenShell reads it as unset.
    re.compile(r"^An enumeration literal '[A-Za-z0-9_]+' is not valid for type '[A-Za-z0-9_]+'"),
)


def open_checked(path: str | os.PathLike[str]) -> ifcopenshell.file:
    """Open an IFC-SPF file, refusing empty, garbage, truncated or project-less files with a clear message.

    Recoverable parser errors (dangling references, unknown entities) do not refuse the file: they are kept
    as warnings, read with `open_warnings(model)`.
    """
    file_path = Path(path)
    if not file_path.is_file():
        raise BadModelError(f"{file_path}: no such file")
    size = file_path.stat().st_size
    if size == 0:
        raise BadModelError(f"{file_path}: the file is empty (0 bytes); expected an IFC model")
    logger = wrapper.logger()
    logger.output_format(wrapper.logger.FMT_INMEMORY)
    declared, nearest = _schema_alias(file_path)
    try:
        if nearest is None:
            model = ifcopenshell.open(str(file_path), logger=logger)
        else:
            with _read_as_schema(file_path, declared, nearest) as readable:
                model = ifcopenshell.open(str(readable), logger=logger)
    except (ifcopenshell.Error, OSError, RuntimeError) as exc:
        logged = logger.max_severity() >= wrapper.logger.LOG_ERROR  # what the parser says beats "check logs"
        raise BadModelError(f"{file_path}: not a readable IFC file ({_parser_errors(logger, file_path) if logged else exc})"
                            ) from exc
    if not _has_trailer(file_path, size):
        raise BadModelError(f"{file_path}: the IFC file is truncated (it does not end with {STEP_TRAILER.decode()})")
    errors = [m.message for m in logger.log_messages() if m.severity >= wrapper.logger.LOG_ERROR]
    if logger.max_severity() >= wrapper.logger.LOG_ERROR and not all(_recoverable(e) for e in errors):
        raise BadModelError(f"{file_path}: the IFC file is damaged or truncated: {_parser_errors(logger, file_path)}")
    if not model.by_type("IfcProject"):
        raise BadModelError(f"{file_path}: the file parses but holds no IfcProject, so it is not an IFC model")
    # The native file keeps logging to this logger for its whole life (e.g. while attributes are set);
    # letting Python free it would leave the file writing into freed memory.
    model._nexus_parse_logger = logger
    problems = [m.message for m in logger.log_messages() if m.severity >= wrapper.logger.LOG_WARNING]
    model._nexus_open_warnings = [_readable(message, file_path) for message in problems]
    if nearest is not None:
        model._nexus_open_warnings.insert(0, (
            f"the file's header names the schema {declared}, which IfcOpenShell does not have; it was read as "
            f"{nearest}, the nearest one it has (the file itself is unchanged; a commit writes {nearest})"))
    return model


# IFC 4.3 as exporters write it (final, corrigenda, addenda, release candidates): all read as the 4.3 schema
# IfcOpenShell ships. Matched only when IfcOpenShell has no schema of the declared name.
_IFC4X3_NAMES = re.compile(r"^IFC4X3(_(TC\d|ADD\d|RC\d))?$")
_FILE_SCHEMA = re.compile(rb"FILE_SCHEMA\s*\(\s*\(\s*'([A-Za-z0-9_]+)'", re.IGNORECASE)
_HEADER_BYTES = 65536


def _schema_alias(path: Path) -> tuple[str, str | None]:
    """The schema the header declares and, when IfcOpenShell lacks it but has a close one, that one."""
    with path.open("rb") as handle:
        header = handle.read(_HEADER_BYTES)
    found = _FILE_SCHEMA.search(header)
    if not found:
        return "", None
    declared = found.group(1).decode("ascii").upper()
    if not _IFC4X3_NAMES.match(declared) or _has_schema(declared):
        return declared, None
    nearest = next((name for name in ("IFC4X3_ADD2", "IFC4X3") if _has_schema(name)), None)
    return declared, nearest


def _has_schema(name: str) -> bool:
    try:
        wrapper.schema_by_name(name)
    except (RuntimeError, IndexError, ValueError):
        return False
    return True


@contextlib.contextmanager
def _read_as_schema(path: Path, declared: str, nearest: str) -> Iterator[Path]:
    """A temporary copy of the file whose header names `nearest` instead of `declared`; the user's file is never
    edited. Deleted once the model has been read (IfcOpenShell keeps no handle on it)."""
    handle, name = tempfile.mkstemp(prefix=".nexus-schema-", suffix=".ifc")
    copy = Path(name)
    try:
        with os.fdopen(handle, "wb") as out, path.open("rb") as source:
            header = source.read(_HEADER_BYTES)
            found = _FILE_SCHEMA.search(header)
            if found is None or found.group(1).decode("ascii").upper() != declared:
                raise OSError("its header changed while it was being read")
            out.write(header[:found.start(1)] + nearest.encode("ascii") + header[found.end(1):])
            while chunk := source.read(1 << 20):
                out.write(chunk)
        yield copy
    finally:
        copy.unlink(missing_ok=True)


def open_warnings(model: ifcopenshell.file) -> list[str]:
    """The recoverable problems the parser found when the model was opened (empty for a clean file)."""
    return list(getattr(model, "_nexus_open_warnings", None) or [])


def describe_warnings(warnings: list[str]) -> list[str]:
    """At most WARNINGS_SHOWN lines, the last one saying how many more there were."""
    if len(warnings) <= WARNINGS_SHOWN:
        return list(warnings)
    return [*warnings[:WARNINGS_SHOWN - 1], f"... and {len(warnings) - WARNINGS_SHOWN + 1} more"]


def _recoverable(message: str) -> bool:
    return any(pattern.match(message) for pattern in _RECOVERABLE)


_DANGLING = re.compile(r"^Instance reference #(\d+) used by instance #(\d+) at attribute index (\d+) not found")


_ENUMERATION = re.compile(r"^An enumeration literal '([A-Za-z0-9_]+)' is not valid for type '([A-Za-z0-9_]+)' at offset (\d+)")


def _readable(message: str, path: Path) -> str:
    dangling = _DANGLING.match(message)
    if dangling:
        missing, user, index = dangling.groups()
        return f"#{user} refers to #{missing} (attribute {int(index) + 1}), which is not in the file"
    enumeration = _ENUMERATION.match(message)
    if enumeration:
        literal, enum_type, offset = enumeration.groups()
        return (f"{_instance_at(path, int(offset))} has .{literal}., which is not a value of {enum_type} in this "
                "schema; it reads as unset, and a commit writes it as unset")
    return re.sub(r" at offset \d+$", "", message)


def _instance_at(path: Path, offset: int) -> str:
    """'#<id> (line N)' of the instance whose text holds byte `offset` (the parser reports offsets, not ids)."""
    line = 1
    with path.open("rb") as handle:
        remaining = offset
        while remaining > 0 and (chunk := handle.read(min(remaining, 1 << 20))):
            line += chunk.count(b"\n")
            remaining -= len(chunk)
        handle.seek(max(0, offset - 4096))
        before = handle.read(min(offset, 4096))
    found = list(re.finditer(rb"#(\d+)\s*=", before))
    return f"#{found[-1].group(1).decode()} (line {line})" if found else f"line {line}"


_OFFSET = re.compile(r" at offset (\d+)")


def _parser_errors(logger: Any, path: Path) -> str:
    errors = [m.message for m in logger.log_messages() if m.severity >= wrapper.logger.LOG_ERROR]
    shown = "; ".join(_OFFSET.sub(lambda found: f" at {_instance_at(path, int(found.group(1)))}", error)
                      for error in errors[:_PARSER_MESSAGES_SHOWN])
    more = len(errors) - _PARSER_MESSAGES_SHOWN
    return shown + (f" (and {more} more)" if more > 0 else "") if errors else "the parser reported errors"


def _has_trailer(path: Path, size: int) -> bool:
    with path.open("rb") as handle:
        handle.seek(max(0, size - 4096))
        return handle.read().rstrip().endswith(STEP_TRAILER)


def describe_document(model: ifcopenshell.file, path: str | os.PathLike[str], entities: int | None = None) -> dict[str, Any]:
    """The `document` block of the host's hello: title, schema, path and the storeys (the views). `entities`:
    the model's entity count when the caller knows it (counting them walks the whole model)."""
    projects = model.by_type("IfcProject")
    title = (projects[0].Name if projects and projects[0].Name else None) or Path(path).stem or "IFC model"
    storeys = sorted(model.by_type("IfcBuildingStorey"), key=lambda s: (_elevation(s), s.id()))
    document: dict[str, Any] = {
        "title": title,
        "schema": model.schema_identifier,
        "path": str(Path(path).resolve()),
        "storeys": _labels_in_order(model, storeys)[:100],
        "entities": len(model.entity_names()) if entities is None else entities,
    }
    warnings = open_warnings(model)
    if warnings:
        document["warnings"] = describe_warnings([
            f"the file opened with {len(warnings)} recoverable problem(s) that IfcOpenShell skipped; "
            "the elements they affect may lack data", *warnings])
    return document


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
        "levels": [_level(s, label) for s, label in zip(storeys, _labels_in_order(model, storeys), strict=True)],
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


def _labels_in_order(model: ifcopenshell.file, storeys: list[ifcopenshell.entity_instance]) -> list[str]:
    labels = storey_labels(model)
    return [labels[s.id()] for s in storeys]


def _level(storey: ifcopenshell.entity_instance, label: str) -> dict[str, Any]:
    """A storey of the context: the name views take, and its own Name when that is not it (shared by another
    storey, or looking like a step id), so the model can tell storeys named alike apart."""
    level: dict[str, Any] = {"name": label, "elevation": _elevation(storey), "id": storey.id()}
    own = (storey.Name or "").strip()
    if own and own != label:
        level["storey_name"] = own
    return level


def _elevation(storey: ifcopenshell.entity_instance) -> float:
    try:
        return float(storey.Elevation or 0.0)
    except (TypeError, ValueError):
        return 0.0


@contextlib.contextmanager
def directory_lock(directory: str | os.PathLike[str]) -> Iterator[None]:
    """An exclusive advisory lock on a directory (POSIX flock), held while a commit checks and replaces a file
    in it, so two hosts saving the same file cannot interleave their check and rename."""
    try:
        import fcntl
    except ImportError:  # Windows: os.replace is atomic; the check-then-replace window stays
        yield
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def write_beside(target: str | os.PathLike[str], data: bytes, sync: bool = True) -> Path:
    """Write `data` to a fresh file beside `target` (resolved through symlinks) with the target's permissions
    (or the umask's default for a new file), fsynced (`sync`; else see BackgroundFsync), ready for
    `replace_atomically`."""
    real = Path(os.path.realpath(target))
    temp = temp_path_beside(real)
    try:
        with open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
        _copy_permissions(real, temp)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


class BackgroundFsync:
    """fsync a written file on a thread (the kernel's wait for the disk holds no lock), so the caller works
    meanwhile (the keeper: the change report); `wait` before renaming the file into place raises the
    OSError the fsync met. Joined before the keeper forks again (no thread outlives a commit)."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY)
        self._error: OSError | None = None
        self._thread = threading.Thread(target=self._sync, name="commit-fsync", daemon=True)
        self._thread.start()

    def _sync(self) -> None:
        try:
            os.fsync(self._fd)
        except OSError as exc:
            self._error = exc

    def wait(self) -> None:
        if self._fd >= 0:
            self._thread.join()
            os.close(self._fd)
            self._fd = -1
        if self._error is not None:
            raise self._error


def _copy_permissions(source: Path, temp: Path) -> None:
    try:
        info = source.stat()
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)
        return
    os.chmod(temp, stat.S_IMODE(info.st_mode))
    if hasattr(os, "chown"):
        with contextlib.suppress(PermissionError):
            os.chown(temp, info.st_uid, info.st_gid)


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
    """Move a fully written (and fsynced) file onto the target (through a symlink, which stays a symlink),
    then make the rename itself durable."""
    real = os.path.realpath(target)
    os.replace(written, real)
    directory = os.open(Path(real).parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def save_atomically(model: ifcopenshell.file, target: str | os.PathLike[str]) -> None:
    """Write the model to a temporary file beside the target, fsync it, then rename it over the target."""
    temp = temp_path_beside(os.path.realpath(target))
    try:
        model.write(str(temp))
        fsync_file(temp)
        _copy_permissions(Path(os.path.realpath(target)), temp)
        replace_atomically(temp, target)
    finally:
        temp.unlink(missing_ok=True)
