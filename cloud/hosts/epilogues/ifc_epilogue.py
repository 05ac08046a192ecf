# ruff: noqa: F821
# NexusAI change report for IFC models. Composed in the cloud, run by the IFC host right after an
# automation succeeded, in the same process and against the same (not yet committed) model; read-only.
# Globals from the host: model, ifcopenshell, nexus_changes() -> {"added", "modified", "deleted"} (STEP ids),
# nexus_deleted_info() -> {id: {class, type, storey, global_id, name}} captured when each was deleted,
# nexus_geometry_changed() -> ids of elements whose shape or placement changed (added/deleted included),
# nexus_change_details() -> {"groups": [{kinds, count, classes, ids}], "elements": [{id, status, class, name,
# tag, kinds, changes: [{key, old, new}]}], "recorded"?: {added, modified, deleted}}: modified elements grouped by
# what changed (a "linked" group names the changed entities that reached its elements in "via"), old → new values;
# "recorded" is there when the script's own change record disagreed with the model it wrote;
# nexus_storey_ids(ids) -> {id: step id of its storey or None} and nexus_storey_labels() -> {storey id: the name
# views give it} (ifc_host/spatial.py: the one rule for which storey an element stands on and how storeys are named),
# nexus_kind_words() -> {kind of change: the words for it} (ifc_host/change_details.KIND_WORDS).
# Prints the report, then one "@@nexus {json}" directive line that the cloud strips.
import json

_NX_NAMED_LIMIT = 15
_NX_GROUP_LINES = 25
_NX_VIEW_IDS = 200
_NX_LAZY_INDEX_LIMIT = 200  # up to this many elements to describe, read their own relationships one by one
_NX_STATUS_WORDS = {"modified": " | before -> after", "added": " | new", "deleted": " | last values"}


class _NxLazyIndex:
    """Type of a few elements, read from each one's own relationships (a big model is not walked)."""

    def __init__(self):
        self._types = {}

    def type_of_element(self, element_id):
        if element_id not in self._types:
            element = model.by_id(element_id)
            rels = [r for attribute in ("IsTypedBy", "IsDefinedBy") for r in getattr(element, attribute, None) or ()
                    if r.is_a("IfcRelDefinesByType")]
            relating = max(rels, key=lambda r: r.id()).RelatingType if rels else None
            self._types[element_id] = (relating.Name or f"#{relating.id()}") if relating is not None else None
        return self._types[element_id]


class _NxIndex:
    """Type of every element, read from the type relationships in one pass (cheap for many changes)."""

    def __init__(self):
        self.type_of = {}
        for rel in model.by_type("IfcRelDefinesByType"):
            relating = rel.RelatingType
            name = (relating.Name or f"#{relating.id()}") if relating is not None else None
            for element in rel.RelatedObjects or ():
                self.type_of[element.id()] = name

    def type_of_element(self, element_id):
        return self.type_of.get(element_id)


def _nx_describe(element_id, index, storey, named):
    element = model.by_id(element_id)
    info = {"class": element.is_a(), "type": index.type_of_element(element_id), "storey": storey}
    if named:
        info.update(global_id=getattr(element, "GlobalId", None), name=getattr(element, "Name", None),
                    tag=getattr(element, "Tag", None))
    return info


def _nx_line(element_id, info):
    head = f"#{element_id} {info['class']}"
    label = info.get("name")
    if info.get("tag") and info.get("tag") != label:
        label = f"{label}, mark {info['tag']}" if label else f"mark {info['tag']}"
    if label:
        head += f' "{label}"'
    parts = [head, f"type {info.get('type') or '(no type)'}", info.get("storey") or "(no storey)"]
    if info.get("global_id"):
        parts.append(f"GlobalId {info['global_id']}")
    return "- " + " | ".join(parts)


def _nx_groups(ids, infos):
    groups = {}
    for element_id in ids:
        info = infos[element_id]
        groups.setdefault((info["class"], info.get("type") or "(no type)"), []).append(element_id)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    lines = [f"- {len(members)} x {cls} | type {type_name} | e.g. #{members[0]}"
             for (cls, type_name), members in ordered[:_NX_GROUP_LINES]]
    if len(ordered) > _NX_GROUP_LINES:
        rest = sum(len(members) for _, members in ordered[_NX_GROUP_LINES:])
        lines.append(f"- ... {len(ordered) - _NX_GROUP_LINES} more groups ({rest} elements)")
    return lines


def _nx_storey_counts(ids, infos):
    counts = {}
    for element_id in ids:
        storey = infos[element_id].get("storey") or "(no storey)"
        counts[storey] = counts.get(storey, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _nx_value(value):
    return "(none)" if value is None else value


def _nx_classes(classes):
    if len(classes) == 1:
        return next(iter(classes))
    ordered = sorted(classes.items(), key=lambda item: (-item[1], item[0]))
    shown = ", ".join(f"{count} {cls}" for cls, count in ordered[:3])
    return f"elements ({shown}{', ...' if len(ordered) > 3 else ''})"


def _nx_values(element):
    """old -> new of one element, on one line (the model's copy collapses repeated lines)."""
    if not element:
        return ""
    parts = []
    for change in element.get("changes") or []:
        key = change["key"].split(":", 1)[-1]
        if element["status"] == "modified":
            parts.append(f"{key} {_nx_value(change['old'])} -> {_nx_value(change['new'])}")
        else:
            parts.append(f"{key} {_nx_value(change['old'] if element['status'] == 'deleted' else change['new'])}")
    return (_NX_STATUS_WORDS.get(element["status"], "") + ": " + "; ".join(parts)) if parts else ""


def _nx_groups_by_change(details):
    groups = details.get("groups") or []
    kind_words = nexus_kind_words()
    if groups:
        print("Modified, by what changed: " + "; ".join(
            " and ".join(kind_words.get(k, k) for k in g["kinds"])
            + (f" ({', '.join(g['via'])})" if g.get("via") else "") + f": {g['count']} "
            + _nx_classes(g.get("classes") or {}) for g in groups) + ".")
    if details.get("error"):
        print(f"(before -> after could not be worked out: {details['error']})")


def _nx_before_after(details, counts):
    elements = details.get("elements") or []
    if elements:
        print("Before -> after:")
    for element in elements:
        label = element.get("name") or ""
        if element.get("tag") and element.get("tag") != label:
            label = f"{label}, mark {element['tag']}" if label else f"mark {element['tag']}"
        print(f"  #{element['id']} {element.get('class')}" + (f' "{label}"' if label else "") + _nx_values(element))
    for status in ("modified", "added", "deleted"):
        beyond = counts[status] - sum(1 for e in elements if e["status"] == status)
        if beyond > 0:
            print(f"... and {beyond} more {status} element(s) whose values are not listed (counted above).")


def _nx_report():
    changes = nexus_changes()
    added, modified, deleted = changes["added"], changes["modified"], changes["deleted"]
    deleted_info = nexus_deleted_info() if "nexus_deleted_info" in globals() else {}
    if "nexus_geometry_changed" in globals():
        geometric = set(nexus_geometry_changed())
    else:
        geometric = set(added) | set(deleted)
    total = len(added) + len(modified) + len(deleted)
    named = total <= _NX_NAMED_LIMIT
    index = _NxLazyIndex() if len(added) + len(modified) <= _NX_LAZY_INDEX_LIMIT else _NxIndex()
    labels = nexus_storey_labels()
    storeys = {i: labels.get(s, f"#{s}") if s is not None else None
               for i, s in nexus_storey_ids(added + modified).items()}
    infos = {element_id: _nx_describe(element_id, index, storeys.get(element_id), named)
             for element_id in added + modified}
    for element_id in deleted:
        known = deleted_info.get(element_id) or deleted_info.get(str(element_id)) or {}
        infos[element_id] = {"class": known.get("class") or "IfcProduct", "type": known.get("type"),
                             "storey": known.get("storey"), "global_id": known.get("global_id"),
                             "name": known.get("name"), "tag": None}

    print("=== CHANGE REPORT ===")
    details = (nexus_change_details() or {}) if "nexus_change_details" in globals() else {}
    recorded = details.get("recorded")
    if recorded:
        print(f"Note: this report comes from the model the script wrote. The script's own change record said "
              f"{recorded['added']} added, {recorded['modified']} modified, {recorded['deleted']} deleted; it "
              "worked around the host's change recording.")
    if total == 0:
        print("No elements were added, modified or deleted.")
    else:
        print(f"{len(added)} added, {len(modified)} modified, {len(deleted)} deleted element(s).")
    values = {e["id"]: e for e in details.get("elements") or []}
    for title, ids in (("Added", added), ("Modified", modified), ("Deleted", deleted)):
        if not ids:
            continue
        if named:
            print(f"{title}:")
            for element_id in ids:
                print(_nx_line(element_id, infos[element_id]) + _nx_values(values.get(element_id)))
        else:
            print(f"{title} ({len(ids)}), by class and type:")
            for line in _nx_groups(ids, infos):
                print(line)
    if not named:
        by_storey = _nx_storey_counts(added + modified + deleted, infos)
        print("By storey: " + ", ".join(f"{name} {count}" for name, count in by_storey[:12]))
    _nx_groups_by_change(details)
    if not named:
        _nx_before_after(details, {"added": len(added), "modified": len(modified), "deleted": len(deleted)})

    present_geometric = [i for i in added + modified if i in geometric]
    focus = present_geometric or [i for i in deleted if i in geometric]
    view_counts = [(name, count) for name, count in _nx_storey_counts(focus, infos) if name != "(no storey)"]
    directive = {
        "geometry_changed": bool(geometric),
        "view": view_counts[0][0] if view_counts else None,
        "element_ids": present_geometric[:_NX_VIEW_IDS],
    }
    print("@@nexus " + json.dumps(directive))


_nx_report()
