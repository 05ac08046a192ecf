"""A normalised form of a BCF archive, for comparing two archives by meaning: every XML member parsed to
(tag, attributes, text, children) with namespace prefixes, whitespace, number spelling (1 / 1.0), boolean spelling
(1 / true) and date-time spelling (zone, fraction) taken away; every other member by its bytes; directories left out."""
from __future__ import annotations

import datetime
import hashlib
import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import Any

XML_SUFFIXES = (".bcf", ".bcfv", ".bcfp", ".version", ".xml", ".xsd")
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_DATETIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d")


def normalised(path: Path) -> dict[str, Any]:
    """member name -> its normal form; a topic's members are named by the topic's Guid (its markup's Topic/@Guid),
    whatever its folder is called."""
    members: dict[str, Any] = {}
    with zipfile.ZipFile(path) as archive:
        folders = {}
        for name in archive.namelist():
            if name.endswith("/markup.bcf"):
                topic = ET.fromstring(archive.read(name)).find("Topic")
                folders[name.rsplit("/", 1)[0]] = topic.get("Guid") if topic is not None else None
        for info in archive.infolist():
            if info.is_dir():
                continue
            data = archive.read(info)
            folder, _, rest = info.filename.partition("/")
            name = f"{folders.get(folder) or folder}/{rest}" if rest else info.filename
            if info.filename.lower().endswith(XML_SUFFIXES):
                members[name] = _element(ET.fromstring(data), unordered=name == "extensions.xml")
            else:
                members[name] = ("bytes", len(data), hashlib.sha256(data).hexdigest())
    return members


def _element(node: ET.Element, unordered: bool = False) -> tuple[Any, ...]:
    """(tag, attributes, text, children). An attribute at its schema default (isExternal="false") counts as absent;
    the lists of extensions.xml are an xs:all, so their order means nothing."""
    attributes = tuple(sorted((_local(k), _value(v)) for k, v in node.attrib.items()
                              if not k.startswith("{http://www.w3.org/2001/XMLSchema-instance}")
                              and not (_local(k) == "isExternal" and _value(v) is False)))
    children = tuple(_element(child) for child in node)
    return (_local(node.tag), attributes, _value(node.text or ""), tuple(sorted(children)) if unordered else children)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _value(text: str) -> Any:
    text = " ".join(text.split())
    if _NUMBER.match(text):
        return round(float(text), 9)
    if text in ("true", "false"):
        return text == "true"
    if _DATETIME.match(text):
        try:
            moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return text
        if moment.tzinfo is not None:
            moment = moment.astimezone(datetime.UTC).replace(tzinfo=None)
        return moment.isoformat()
    return text
