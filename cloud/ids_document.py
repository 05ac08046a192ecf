"""An IDS (buildingSMART Information Delivery Specification) carried by a session or a batch: the file read and
checked the way `nexus run --ids` and `nexus batch --ids` read it, and the short summary a person is shown
(title from the document's <info>, number of specifications, size), never the document itself.

The reading is ifc_host/ids_reader.py and the checking ifc_host/ids_check.py (the IFC host's; they never import
cloud).
"""
from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ET
from typing import Any

from ifc_host.ids_reader import IDS_NAMESPACE, IdsProblem, parse_ids

MAX_TITLE = 200


def read_ids_file(path: str) -> str:
    """The IDS file's text, checked; IdsProblem names the option, the file and what is wrong with it."""
    try:
        raw = open(path, "rb").read()
    except OSError as exc:
        raise IdsProblem(f"--ids {path}: {exc.strerror}") from exc
    try:
        parse_ids(raw)
    except IdsProblem as exc:
        raise IdsProblem(f"--ids {path}: {exc}") from exc
    return raw.decode("utf-8")


def check_ids_text(document: str | bytes) -> tuple[str, int]:
    """The document as text and its number of specifications (IdsProblem: not XML, not an IDS, too large)."""
    if isinstance(document, str):
        try:
            document.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate from a JSON string
            raise IdsProblem(f"not XML: the IDS is not valid Unicode text ({exc.reason} at character {exc.start})") from exc
    specifications = len(parse_ids(document).specifications)
    return (document.decode("utf-8") if isinstance(document, bytes) else document), specifications


def ids_summary(text: str | None) -> dict[str, Any] | None:
    """What a person is shown of an IDS: its title (from <info>), number of specifications, size and sha256.
    None for no IDS. Read with the standard library (no ifctester), so a page load stays cheap."""
    if not text:
        return None
    raw = text.encode("utf-8")
    summary: dict[str, Any] = {"title": None, "specifications": None, "bytes": len(raw),
                               "sha256": hashlib.sha256(raw).hexdigest()}
    try:
        root = ET.fromstring(text.lstrip("\ufeff"))
    except ET.ParseError:
        return summary  # stored before checks existed: named by size only
    ns = f"{{{IDS_NAMESPACE}}}"
    title = root.findtext(f"{ns}info/{ns}title")
    summary["title"] = " ".join(title.split())[:MAX_TITLE] if title and title.strip() else None
    summary["specifications"] = len(root.findall(f"{ns}specifications/{ns}specification"))
    return summary
