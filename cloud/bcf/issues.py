"""BCF in: a BCF archive's open topics as the task, and the archive handed back with what was done about each.

Import (`nexus run --bcf-in`, `POST /api/sessions/<id>/bcf`): every open topic (no status, or one other than
Closed/Resolved/Done) is read with its components (selected, coloured, and the visible exceptions of a viewpoint
that hides everything else), its camera and clipping planes, and resolved to elements of the working model
(ifc_host/bcf_resolve.py). The archive, the topics and what they resolved to are kept with the session; the next
message's task lists them topic by topic (cloud/prompts/bcf_task.md).

Answer (`--bcf-out`, `GET /api/sessions/<id>/bcf`): the archive as it came, every topic, comment and viewpoint
kept, and for each open topic a new comment saying what was done (the agent's `TOPIC <guid>:` line, else what the
automations touching its elements did), a new viewpoint of the elements those automations changed, and its status
updated from the person's review: a fix that was committed (kept under `ask`, or applied under `auto`) resolves
the topic; a discarded or rolled-back one leaves it as it was.
"""
from __future__ import annotations

import base64
import datetime
import json
import re
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xsdata.models.datatype import XmlDateTime

from cloud.bcf.archive import read_bcf, version_of, write_bcf
from cloud.store import Store
from cloud.transcript import text_of, tool_calls

CLOSED = {"closed", "resolved", "done"}
RESOLVED = "Resolved"
MAX_TOPICS = 100
MAX_ARCHIVE_BYTES = 50_000_000
TOPIC_LINE = re.compile(r"^\W*TOPIC\s+([0-9A-Fa-f-]{36})\s*[:\-–]\s*(.+)$", re.MULTILINE)
PROMPT_FILE = Path(__file__).resolve().parents[1] / "prompts" / "bcf_task.md"


@dataclass
class Imported:
    archive: bytes
    version: str
    topics: list[dict[str, Any]]  # guid, title, description, status, components, camera, clipping, resolved


def read_topics(path: str | Path) -> tuple[str, list[dict[str, Any]]]:
    """The archive's BCF version and its open topics (as plain data), or BcfProblem."""
    document = read_bcf(path)
    topics = []
    for guid, handler in document.topics.items():
        topic = handler.topic
        status = (topic.topic_status or "").strip()
        if status.lower() in CLOSED:
            continue
        components: list[str] = []
        camera, clipping = None, []
        for viewpoint in handler.viewpoints.values():
            info = viewpoint.visualization_info
            components += _components(info)
            if camera is None:
                camera = _camera(info)
                clipping = _clipping(info)
        topics.append({"guid": guid, "title": topic.title or "", "description": topic.description or "",
                       "status": status or None, "topic_type": topic.topic_type,
                       "comments": [c.comment for c in handler.comments if c.comment][-5:],
                       "components": list(dict.fromkeys(components)), "camera": camera, "clipping": clipping})
    return version_of(document), topics[:MAX_TOPICS]


def _components(info: Any) -> list[str]:
    found: list[str] = []
    components = info.components
    if components is None:
        return found
    if components.selection is not None:
        found += [c.ifc_guid for c in components.selection.component if c.ifc_guid]
    for colour in (components.coloring.color if components.coloring is not None else []):
        listed = colour.component if hasattr(colour, "component") else colour.components.component
        found += [c.ifc_guid for c in listed if c.ifc_guid]
    visibility = components.visibility
    if visibility is not None and visibility.default_visibility is False and visibility.exceptions is not None:
        found += [c.ifc_guid for c in visibility.exceptions.component if c.ifc_guid]
    return found


def _camera(info: Any) -> dict[str, Any] | None:
    camera = info.perspective_camera or info.orthogonal_camera
    if camera is None:
        return None
    point, direction = camera.camera_view_point, camera.camera_direction
    return {"position": [point.x, point.y, point.z], "direction": [direction.x, direction.y, direction.z],
            "perspective": info.perspective_camera is not None}


def _clipping(info: Any) -> list[dict[str, Any]]:
    planes = info.clipping_planes
    listed = (planes.clipping_plane if planes is not None else []) or []
    return [{"location": [p.location.x, p.location.y, p.location.z],
             "direction": [p.direction.x, p.direction.y, p.direction.z]} for p in listed]


def resolve_in_file(topics: list[dict[str, Any]], model: Any) -> None:
    """Resolve the topics against an open model (nexus run: the working model's file)."""
    from ifc_host.bcf_resolve import resolve_topics

    attach_resolution(topics, resolve_topics(model, topics))


def resolver_script(topics: list[dict[str, Any]]) -> str:
    """A read-only collection resolving the topics on a host (the server's upload): this module's resolver."""
    import ifc_host.bcf_resolve as resolver

    plain = [{k: t[k] for k in ("guid", "components", "camera", "clipping")} for t in topics]
    return Path(resolver.__file__).read_text(encoding="utf-8") + \
        f"\n\nprint_resolved(model, {json.dumps(json.dumps(plain))})\n"


def attach_resolution(topics: list[dict[str, Any]], resolved: dict[str, dict[str, Any]]) -> None:
    for topic in topics:
        topic["resolved"] = resolved.get(topic["guid"]) or {"how": "none", "elements": [], "missing": []}


def save_imported(store: Store, session_id: str, archive: bytes, version: str, topics: list[dict[str, Any]]) -> None:
    store.sessions.update_session(session_id, bcf_in=json.dumps({
        "archive": base64.b64encode(archive).decode("ascii"), "version": version, "topics": topics,
        "given": False}))


def imported_issues(store: Store, session_id: str) -> Imported | None:
    session = store.sessions.get_session(session_id)
    text = (session or {}).get("bcf_in")
    if not text:
        return None
    data = json.loads(text)
    return Imported(base64.b64decode(data["archive"]), data["version"], data["topics"])


def task_with_topics(store: Store, session_id: str, text: str) -> str:
    """The person's message, with the imported topics not yet given to the agent listed after it (once)."""
    session = store.sessions.get_session(session_id)
    raw = (session or {}).get("bcf_in")
    if not raw:
        return text
    data = json.loads(raw)
    if data.get("given"):
        return text
    data["given"] = True
    store.sessions.update_session(session_id, bcf_in=json.dumps(data))
    return text + "\n\n" + topics_text(data["topics"])


def topics_text(topics: list[dict[str, Any]]) -> str:
    lines = []
    for number, topic in enumerate(topics, 1):
        resolved = topic.get("resolved") or {}
        elements = resolved.get("elements") or []
        if elements:
            how = "its viewpoint's components" if resolved.get("how") == "components" else \
                "what its viewpoint's camera looks at"
            listed = "; ".join(f"#{e['step_id']} {e['ifc_class']} '{e.get('name') or ''}' ({e['global_id']})"
                               for e in elements[:20])
            more = f" and {len(elements) - 20} more" if len(elements) > 20 else ""
            where = f"Elements ({how}): {listed}{more}."
        else:
            where = "No element of the model could be found for it" + (
                f" (its components {', '.join(resolved.get('missing')[:5])} are not in the model)"
                if resolved.get("missing") else "") + "."
        comments = " | ".join(topic.get("comments") or [])
        lines.append(f"{number}. TOPIC {topic['guid']}: {topic['title']}"
                     + (f" — {topic['description']}" if topic.get("description") else "")
                     + (f" (comments: {comments})" if comments else "") + f"\n   {where}")
    return PROMPT_FILE.read_text(encoding="utf-8").replace("{topics}", "\n".join(lines))


# --- answering ------------------------------------------------------------------------------------------------

def answered_archive(store: Store, session_id: str, imported: Imported, version: str, out: Path, author: str,
                     models: dict[str, str | Path] | None = None) -> Path:
    """The imported archive with every open topic answered (see the module's docstring). `version` must be the
    archive's own: a BCF archive is handed back in the version it came in."""
    if version != imported.version and not (imported.version == "2.0" and version == "2.1"):
        from cloud.bcf.export import BcfExportProblem

        raise BcfExportProblem(f"the session's issues came as BCF {imported.version}; they go back in that version")
    with tempfile.TemporaryDirectory(prefix="nexus-bcf-in-") as folder:
        source = Path(folder) / "in.bcf"
        source.write_bytes(imported.archive)
        document = read_bcf(source)
        runs = _automations(store, session_id)
        said = _topic_lines(store, session_id)
        now = XmlDateTime.from_datetime(datetime.datetime.now(datetime.UTC).replace(microsecond=0))
        for topic in imported.topics:
            handler = document.topics.get(topic["guid"])
            if handler is not None:
                _answer(document, handler, topic, runs, said.get(topic["guid"].lower()), author, now, store,
                        session_id, models)
        write_bcf(document, out)
    return out


def _automations(store: Store, session_id: str) -> list[dict[str, Any]]:
    out = []
    for entry in store.sessions.transcript(session_id):
        if entry.get("role") != "assistant":
            continue
        for call in tool_calls(entry):
            result = store.results.get_result(session_id, call["id"])
            if result and result.get("mode") == "automate":
                out.append(result)
    return out


def _topic_lines(store: Store, session_id: str) -> dict[str, str]:
    """What the agent said about each topic: its `TOPIC <guid>: ...` lines (the last one wins)."""
    said: dict[str, str] = {}
    for entry in store.sessions.transcript(session_id):
        if entry.get("role") == "assistant":
            for match in TOPIC_LINE.finditer(text_of(entry)):
                said[match.group(1).lower()] = match.group(2).strip()
    return said


def _touches(result: dict[str, Any], step_ids: set[int]) -> bool:
    changes = result.get("changes") or {}
    touched = {i for key in ("added", "modified", "deleted") for i in changes.get(key) or []}
    if touched & step_ids:
        return True
    details = ((result.get("validation") or {}).get("changed_elements")) or []
    return any(e.get("step_id") in step_ids for e in details)


def _answer(document: Any, handler: Any, topic: dict[str, Any], runs: list[dict[str, Any]], said: str | None,
            author: str, now: Any, store: Store, session_id: str, models: dict[str, str | Path] | None) -> None:
    elements = (topic.get("resolved") or {}).get("elements") or []
    step_ids = {e["step_id"] for e in elements if e.get("step_id") is not None}
    # Only automations that changed the topic's own elements count for it: another topic's fix never resolves it.
    touching = [r for r in runs if step_ids and _touches(r, step_ids)]
    kept = [r for r in touching if r.get("committed")]
    refused = [r for r in touching if not r.get("committed")]
    if kept:
        who = _who(kept[-1])
        text = f"Fixed by NexusAI{who}: {said or _summary(kept[-1])}"
        status = RESOLVED
    elif refused:
        last = refused[-1]
        decision = last.get("decision") or {}
        if decision.get("decision") == "discard":
            reason = f"discarded by {decision.get('by') or 'the person'}" + (
                f" ({decision['comment']})" if decision.get("comment") else "")
        else:
            reason = "rolled back: " + str((last.get("error") or {}).get("message") or "it failed")[:300]
        text = f"Not fixed: NexusAI's change was {reason}; the topic stays open." + (f" {said}" if said else "")
        status = None
    else:
        text = f"Not changed by NexusAI: {said}" if said else \
            "Not changed by NexusAI: no automation of this session changed its elements."
        if said and not step_ids:
            text += " (The topic could not be resolved to elements of the model, so its status is left as it was.)"
        status = None
    viewpoint_guid = _add_viewpoint(document, handler, kept, store, session_id, models) if kept else None
    _add_comment(document, handler, text, author, now, viewpoint_guid)
    if status is not None:
        handler.topic.topic_status = status
    handler.topic.modified_date = now
    handler.topic.modified_author = author


def _who(result: dict[str, Any]) -> str:
    decision = result.get("decision") or {}
    if decision.get("decision") == "keep" and decision.get("by") not in (None, "policy"):
        return f", kept by {decision['by']}"
    return ""


def _summary(result: dict[str, Any]) -> str:
    changes = result.get("changes") or {}
    counts = ", ".join(f"{len(changes.get(k) or [])} {k}" for k in ("added", "modified", "deleted")
                       if changes.get(k))
    report = (result.get("change_report") or "").strip().splitlines()
    return (report[0][:300] if report else "the model was changed") + (f" ({counts})" if counts else "")


def _version(document: Any) -> str:
    return "2.1" if version_of(document) in ("2.0", "2.1") else "3.0"


def _add_comment(document: Any, handler: Any, text: str, author: str, now: Any, viewpoint_guid: str | None) -> None:
    v2 = _version(document) == "2.1"
    if v2:
        import bcf.v2.model as mdl
    else:
        import bcf.v3.model as mdl  # type: ignore[no-redef]
    comment = mdl.Comment(date=now, author=author, comment=text, guid=str(uuid.uuid4()),
                          viewpoint=mdl.CommentViewpoint(guid=viewpoint_guid) if viewpoint_guid else None)
    if v2:
        handler.markup.comment.append(comment)
    else:
        if handler.topic.comments is None:
            handler.topic.comments = mdl.TopicComments()
        handler.topic.comments.comment.append(comment)


def _add_viewpoint(document: Any, handler: Any, kept: list[dict[str, Any]], store: Store, session_id: str,
                   models: dict[str, str | Path] | None) -> str | None:
    """A viewpoint selecting and colouring the elements the kept automations changed, framed when the model is
    at hand, with the image the product captured after the last of them as its snapshot."""
    from cloud.bcf.export import SNAPSHOT_PX, _Geometry, _snapshot, _visualization_info
    from ifc_host.findings import ElementRef, Finding

    refs = []
    for result in kept:
        for e in ((result.get("validation") or {}).get("changed_elements") or []):
            refs.append(ElementRef.from_json(e))
    refs = [r for r in dict.fromkeys(refs) if r.global_id]
    if not refs:
        return None
    version = _version(document)
    if version == "2.1":
        import bcf.v2.model as mdl
        import bcf.v2.visinfo as visinfo
    else:
        import bcf.v3.model as mdl  # type: ignore[no-redef]
        import bcf.v3.visinfo as visinfo  # type: ignore[no-redef]
    geometry = _Geometry({name: Path(path) for name, path in (models or {}).items()})
    info = _visualization_info(mdl, version, refs, [Finding("fix", "info", "changed", elements=tuple(refs))],
                               geometry)
    viewpoint = visinfo.VisualizationInfoHandler(info)
    image = (kept[-1].get("image") or {}).get("image_id")
    png = store.results.get_image(session_id, image) if image else None
    if png is None and models:  # no image was captured (a change without geometry): draw the elements
        png = _snapshot(refs, geometry.paths, SNAPSHOT_PX)
    if png:
        viewpoint.snapshot = png
    handler.add_visinfo_handler(viewpoint, f"{info.guid}.png" if png else None)
    return info.guid
