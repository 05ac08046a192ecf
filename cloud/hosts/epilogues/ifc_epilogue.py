# ruff: noqa: F821
# NexusAI change report for IFC models. Composed in the cloud, run by the IFC host right after an
# automation succeeded, in the same process and against the same (not yet committed) model; read-only.
# Globals from the host: model, ifcopenshell, nexus_changes() -> {"added", "modified", "deleted"} (STEP ids),
# nexus_deleted_info() -> {id: {class, type, storey, global_id, name}} captured when each was deleted,
# nexus_geometry_changed() -> ids of elements whose shape or placement changed (added/deleted included).
# Prints the report, then one "@@nexus {json}" directive line that the cloud strips.
import json

import ifcopenshell.util.element

_NX_NAMED_LIMIT = 15
_NX_GROUP_LINES = 25
_NX_VIEW_IDS = 200


def _nx_storey(element, cache):
    """The storey an element stands on (through its container, aggregate, or the wall it is cut into)."""
    chain = []
    current = element
    storey = None
    for _ in range(12):
        if current is None:
            break
        if current.id() in cache:
            storey = cache[current.id()]
            break
        chain.append(current.id())
        if current.is_a("IfcBuildingStorey"):
            storey = current.Name or f"#{current.id()}"
            break
        parent = ifcopenshell.util.element.get_container(current)
        if parent is None:
            parent = ifcopenshell.util.element.get_aggregate(current)
        if parent is None and current.is_a("IfcOpeningElement"):
            voids = getattr(current, "VoidsElements", None) or ()
            parent = voids[0].RelatingBuildingElement if voids else None
        if parent is None and current.is_a("IfcElement"):
            fills = getattr(current, "FillsVoids", None) or ()
            parent = fills[0].RelatingOpeningElement if fills else None
        current = parent
    for element_id in chain:
        cache[element_id] = storey
    return storey


def _nx_describe(element_id, storeys):
    element = model.by_id(element_id)
    element_type = None if element.is_a("IfcTypeObject") else ifcopenshell.util.element.get_type(element)
    return {
        "class": element.is_a(),
        "type": (element_type.Name or f"#{element_type.id()}") if element_type is not None else None,
        "storey": _nx_storey(element, storeys),
        "global_id": getattr(element, "GlobalId", None),
        "name": getattr(element, "Name", None),
        "tag": getattr(element, "Tag", None),
    }


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


def _nx_report():
    changes = nexus_changes()
    added, modified, deleted = changes["added"], changes["modified"], changes["deleted"]
    deleted_info = nexus_deleted_info() if "nexus_deleted_info" in globals() else {}
    if "nexus_geometry_changed" in globals():
        geometric = set(nexus_geometry_changed())
    else:
        geometric = set(added) | set(deleted)
    storeys = {}
    infos = {element_id: _nx_describe(element_id, storeys) for element_id in added + modified}
    for element_id in deleted:
        known = deleted_info.get(element_id) or deleted_info.get(str(element_id)) or {}
        infos[element_id] = {"class": known.get("class") or "IfcProduct", "type": known.get("type"),
                             "storey": known.get("storey"), "global_id": known.get("global_id"),
                             "name": known.get("name"), "tag": None}

    total = len(added) + len(modified) + len(deleted)
    print("=== CHANGE REPORT ===")
    if total == 0:
        print("No elements were added, modified or deleted.")
    else:
        print(f"{len(added)} added, {len(modified)} modified, {len(deleted)} deleted element(s).")
    named = total <= _NX_NAMED_LIMIT
    for title, ids in (("Added", added), ("Modified", modified), ("Deleted", deleted)):
        if not ids:
            continue
        if named:
            print(f"{title}:")
            for element_id in ids:
                print(_nx_line(element_id, infos[element_id]))
        else:
            print(f"{title} ({len(ids)}), by class and type:")
            for line in _nx_groups(ids, infos):
                print(line)
    if not named:
        by_storey = _nx_storey_counts(added + modified + deleted, infos)
        print("By storey: " + ", ".join(f"{name} {count}" for name, count in by_storey[:12]))

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
