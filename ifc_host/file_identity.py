"""What the host knows of a model file without opening it: its signature, and the error for an unusable one.

Standard library only: the runtime process (websocket, executor proxy, render client) imports this and never
IfcOpenShell, which only the keeper and the render servers load (model_file.py opens files).
"""
from __future__ import annotations

import os


class BadModelError(ValueError):
    """The file is not a usable IFC model; the message says why, for a person to read."""


def file_signature(path: str | os.PathLike[str]) -> tuple[int, int, int, int] | None:
    """Identity and version of the file at `path` (through symlinks): a replaced or rewritten file differs."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns
