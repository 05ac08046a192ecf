"""Reading an IDS document (buildingSMART Information Delivery Specification): checked to be XML, an IDS and valid
against the IDS schema, parsed with IfcOpenShell's ifctester. ifctester (and with it IfcOpenShell) is imported
at the first parse, so a process that only names or summarises an IDS (the chat server's pages) loads neither;
checking a model against one is ifc_host/ids_check.py.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

IDS_NAMESPACE = "http://standards.buildingsmart.org/IDS"
MAX_IDS_BYTES = 1_000_000  # an IDS is a few kilobytes; a megabyte is far beyond any real one


class IdsProblem(ValueError):
    """The text is not XML, not an IDS document, or too large; the message names the problem."""


def parse_ids(text: str | bytes) -> Any:
    """The parsed `ifctester.ids.Ids`, or IdsProblem naming what is wrong with the document."""
    # imported on first use (~1 s with its XML schema) since most runs have no IDS
    from ifctester import ids as ids_module

    raw = text.encode("utf-8") if isinstance(text, str) else text
    if len(raw) > MAX_IDS_BYTES:
        raise IdsProblem(f"the IDS is {len(raw)} bytes; at most {MAX_IDS_BYTES} are accepted")
    try:
        xml = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IdsProblem(f"not XML: the IDS is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    try:
        root = ET.fromstring(xml.lstrip("\ufeff"))
    except ET.ParseError as exc:
        raise IdsProblem(f"not XML: {exc}") from exc
    if root.tag != f"{{{IDS_NAMESPACE}}}ids":
        raise IdsProblem(f"not an IDS document: the root element is <{root.tag}>, expected <ids> in the namespace "
                         f"{IDS_NAMESPACE}")
    from xmlschema import XMLSchemaValidationError

    document = xml.lstrip("\ufeff")
    try:
        # Validate the text itself: ifctester's validate=True checks an ElementTree that has lost the namespace
        # declarations, so a facet typed `base="xs:string"` fails as an unmapped prefix (most real IDS files).
        ids_module.get_schema().validate(document)
        return ids_module.from_string(document, validate=False)
    except (XMLSchemaValidationError, ids_module.IdsXmlValidationError) as exc:
        error = getattr(exc, "xml_error", exc)
        detail = getattr(error, "reason", None) or str(error).strip().splitlines()[0]
        path = getattr(error, "path", None)
        raise IdsProblem(f"not a valid IDS document: {detail}" + (f" (at {path})" if path else "")) from exc
    except Exception as exc:  # xmlschema decode errors and facets ifctester cannot parse
        raise IdsProblem(f"not a valid IDS document: {type(exc).__name__}: {exc}") from exc


_PARSED: dict[str, Any] = {}  # IDS text -> parsed; filled in the keeper so every forked script inherits it


def parsed_ids(text: str) -> Any:
    """parse_ids, remembered: the keeper calls it when a job brings an IDS, so the next script's process
    (forked from the keeper) finds ifctester imported and the IDS parsed (~1 s otherwise, on every run)."""
    found = _PARSED.get(text)
    if found is None:
        found = parse_ids(text)
        if len(_PARSED) >= 4:
            _PARSED.clear()
        _PARSED[text] = found
    return found
