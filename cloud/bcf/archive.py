"""Reading and writing BCF archives (2.1 and 3.0) with IfcOpenShell's bcf-client.

`read_bcf` parses everything an archive holds (project, every topic's markup, viewpoints, snapshots, bitmaps,
BIM snippets, referenced files and documents) into bcf-client's objects, so `write_bcf` serialises what was read
rather than copying the original bytes: a round trip through the product keeps an archive's meaning.
"""
from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import bcf.bcfxml

VERSIONS = ("2.1", "3.0")


class BcfProblem(ValueError):
    """The file is not a BCF archive this product can read; the message names the problem."""


def read_bcf(path: str | Path) -> Any:
    """The archive at `path` as a bcf-client BcfXml (v2 or v3), fully loaded, or BcfProblem."""
    path = Path(path)
    if not path.is_file():
        raise BcfProblem(f"no BCF file at {path}")
    if not zipfile.is_zipfile(path):
        raise BcfProblem(f"{path} is not a BCF archive (not a zip file)")
    with zipfile.ZipFile(path) as archive:
        if "bcf.version" not in archive.namelist():
            raise BcfProblem(f"{path} is not a BCF archive: it has no bcf.version")
    try:
        document = bcf.bcfxml.load(path)
        _load_everything(document)
    except BcfProblem:
        raise
    except Exception as exc:  # xsdata parser errors, a version bcf-client does not know
        raise BcfProblem(f"{path} could not be read as BCF: {type(exc).__name__}: {exc}") from exc
    return document


def write_bcf(document: Any, path: str | Path) -> Path:
    """Write `document` (a bcf-client BcfXml) as an archive at `path`.

    Each topic is written in the folder named by its Guid, as BCF requires. (An archive may name a topic's folder
    otherwise, as buildingSMART's 3.0 case "Single invisible wall" does; bcf-client would then write the markup in
    the old folder and the viewpoints in the Guid's, parting a topic from its viewpoints.)"""
    path = Path(path)
    for topic in document.topics.values():
        folder = topic._topic_dir
        if isinstance(folder, zipfile.Path) and folder.name != topic.guid:
            topic._topic_dir = folder.parent.joinpath(f"{topic.guid}/")
    document.save(path)
    return path


def version_of(document: Any) -> str:
    return str(document.version.version_id)


def _load_everything(document: Any) -> None:
    _ = document.project_info
    if version_of(document) == "2.1" or version_of(document) == "2.0":
        _ = document.extension_schema
    else:
        _ = document.extensions
        _ = document.documents
    for topic in document.topics.values():
        if topic.markup is None:
            raise BcfProblem(f"topic {topic.guid} has no readable markup.bcf")
        _ = topic.bim_snippet
        _ = topic.reference_files if hasattr(topic, "reference_files") else None
        _ = topic.document_references if hasattr(topic, "document_references") else None
        for viewpoint in topic.viewpoints.values():
            _ = viewpoint.visualization_info
            _ = viewpoint.snapshot
