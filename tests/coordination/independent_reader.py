"""A second BCF reader, independent of bcf-client: `zipfile`, ElementTree and xmlschema with the XML schemas in
schemas/ (written here from the BCF-XML 2.1 and 3.0 specifications for the parts of an archive this product writes:
bcf.version, project.bcfp, extensions.xml, markup.bcf, .bcfv; strict element order, required attributes, GUID and
colour patterns). buildingSMART's own XSDs are not among the shared files, so these stand in for them.

`read_archive` validates every member and returns {topic guid: Topic} with what the product's viewpoints claim."""
from __future__ import annotations

import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import xmlschema

SCHEMAS = Path(__file__).parent / "schemas"
PNG = b"\x89PNG\r\n\x1a\n"


class InvalidBcf(AssertionError):
    pass


@dataclass
class Viewpoint:
    selected: list[str]
    coloured: dict[str, list[str]]
    camera: dict[str, tuple[float, ...]] | None
    snapshot: bytes | None


@dataclass
class Topic:
    guid: str
    title: str
    description: str
    topic_type: str
    status: str
    priority: str | None
    labels: list[str]
    author: str
    created: str
    viewpoints: list[Viewpoint] = field(default_factory=list)


def _schema(version: str, name: str) -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(SCHEMAS / version.replace(".", "") / f"{name}.xsd"))


def _validated(archive: zipfile.ZipFile, member: str, schema: xmlschema.XMLSchema) -> ET.Element:
    data = archive.read(member)
    errors = list(schema.iter_errors(data.decode("utf-8")))
    if errors:
        raise InvalidBcf(f"{member}: {errors[0].reason} (at {errors[0].path})")
    return ET.fromstring(data)


def read_archive(path: Path) -> tuple[str, dict[str, Topic]]:
    """(version, topics) of the archive at `path`, or InvalidBcf naming the first problem."""
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        if "bcf.version" not in names:
            raise InvalidBcf("no bcf.version")
        version = ET.fromstring(archive.read("bcf.version")).get("VersionId") or ""
        if version not in ("2.1", "3.0"):
            raise InvalidBcf(f"bcf.version names version {version!r}")
        _validated(archive, "bcf.version", _schema(version, "version"))
        if "project.bcfp" in names:
            _validated(archive, "project.bcfp", _schema(version, "project"))
        if version == "3.0":
            if "extensions.xml" not in names:
                raise InvalidBcf("a BCF 3.0 archive needs extensions.xml")
            _validated(archive, "extensions.xml", _schema(version, "extensions"))
        markup_schema, visinfo_schema = _schema(version, "markup"), _schema(version, "visinfo")
        topics: dict[str, Topic] = {}
        for member in sorted(n for n in names if n.endswith("/markup.bcf")):
            folder = member.rsplit("/", 1)[0]
            markup = _validated(archive, member, markup_schema)
            topic = _topic(markup)
            if topic.guid != folder:
                raise InvalidBcf(f"{member}: the topic's Guid {topic.guid} is not its folder's name")
            pointers = markup.findall("Viewpoints") if version == "2.1" else markup.findall("Topic/Viewpoints/ViewPoint")
            for pointer in pointers:
                file = f"{folder}/{pointer.findtext('Viewpoint')}"
                if file not in names:
                    raise InvalidBcf(f"{member} points at a viewpoint {file} the archive does not have")
                snapshot = None
                if pointer.findtext("Snapshot"):
                    snapshot_file = f"{folder}/{pointer.findtext('Snapshot')}"
                    if snapshot_file not in names:
                        raise InvalidBcf(f"{member} points at a snapshot {snapshot_file} the archive does not have")
                    snapshot = archive.read(snapshot_file)
                    if not snapshot.startswith(PNG):
                        raise InvalidBcf(f"{snapshot_file} is not a PNG image")
                info = _validated(archive, file, visinfo_schema)
                topic.viewpoints.append(_viewpoint(info, version, snapshot))
            topics[topic.guid] = topic
        return version, topics


def _topic(markup: ET.Element) -> Topic:
    node = markup.find("Topic")
    assert node is not None
    labels = [e.text or "" for e in node.findall("Labels")] + [e.text or "" for e in node.findall("Labels/Label")]
    return Topic(node.get("Guid", ""), node.findtext("Title", ""), node.findtext("Description", ""),
                 node.get("TopicType", ""), node.get("TopicStatus", ""), node.findtext("Priority"),
                 [label for label in labels if label.strip()], node.findtext("CreationAuthor", ""),
                 node.findtext("CreationDate", ""))


def _viewpoint(info: ET.Element, version: str, snapshot: bytes | None) -> Viewpoint:
    selected = [c.get("IfcGuid", "") for c in info.findall("Components/Selection/Component")]
    coloured: dict[str, list[str]] = {}
    path = "Component" if version == "2.1" else "Components/Component"
    for colour in info.findall("Components/Coloring/Color"):
        coloured[colour.get("Color", "")] = [c.get("IfcGuid", "") for c in colour.findall(path)]
    camera = None
    perspective = info.find("PerspectiveCamera")
    if perspective is not None:
        camera = {name: tuple(float(perspective.findtext(f"{name}/{axis}", "nan")) for axis in "XYZ")
                  for name in ("CameraViewPoint", "CameraDirection", "CameraUpVector")}
        camera["FieldOfView"] = (float(perspective.findtext("FieldOfView", "nan")),)
    return Viewpoint(selected, coloured, camera, snapshot)
