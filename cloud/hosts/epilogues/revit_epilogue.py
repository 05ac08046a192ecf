# NexusAI change report for Revit. Composed in the cloud, run by the host after a committed automation,
# read-only (no transaction is open). Python 2.7 syntax: it runs under IronPython 2.7 inside Revit.
# Globals from the runtime: doc, uidoc, DB, nexus_changes() -> {"added": [...], "modified": [...], "deleted": [...]}.
# Prints the report, then one "@@nexus {json}" directive line that the cloud strips (view to capture).
import json

_NX_NAMED_LIMIT = 15
_NX_GROUP_LINES = 25
_NX_DELETED_IDS = 15
_NX_VIEW_IDS = 50


def _nx_id(element_id):
    value = getattr(element_id, "Value", None)
    if value is None:
        value = element_id.IntegerValue
    return int(value)


def _nx_element(value):
    try:
        return doc.GetElement(DB.ElementId(value))
    except Exception:
        return None


def _nx_valid(element_id):
    return element_id is not None and _nx_id(element_id) != -1


def _nx_category(element):
    try:
        category = element.Category
        if category is not None:
            return category.Name
    except Exception:
        pass
    return ""


def _nx_is_model(element):
    try:
        category = element.Category
        return (category is not None and category.CategoryType == DB.CategoryType.Model
                and not isinstance(element, DB.ElementType))
    except Exception:
        return False


def _nx_name(element):
    try:
        name = element.Name
        if name:
            return name
    except Exception:
        pass
    try:
        parameter = element.get_Parameter(DB.BuiltInParameter.SYMBOL_NAME_PARAM)
        if parameter is not None:
            return parameter.AsString() or ""
    except Exception:
        pass
    return ""


def _nx_family_and_type(element):
    element_type = element if isinstance(element, DB.ElementType) else None
    if element_type is None:
        try:
            type_id = element.GetTypeId()
            if _nx_valid(type_id):
                element_type = doc.GetElement(type_id)
        except Exception:
            element_type = None
    if element_type is None:
        return _nx_name(element)
    family = ""
    try:
        family = element_type.FamilyName or ""
    except Exception:
        pass
    name = _nx_name(element_type)
    if family and name:
        return family + " : " + name
    return family or name


def _nx_level_id(element):
    try:
        level_id = element.LevelId
        if _nx_valid(level_id):
            return level_id
    except Exception:
        pass
    for name in ("FAMILY_LEVEL_PARAM", "WALL_BASE_CONSTRAINT", "SCHEDULE_LEVEL_PARAM",
                 "INSTANCE_REFERENCE_LEVEL_PARAM"):
        try:
            parameter = element.get_Parameter(getattr(DB.BuiltInParameter, name))
            if parameter is not None and parameter.StorageType == DB.StorageType.ElementId:
                level_id = parameter.AsElementId()
                if _nx_valid(level_id):
                    return level_id
        except Exception:
            continue
    return None


def _nx_level_name(element):
    level_id = _nx_level_id(element)
    if level_id is None:
        return ""
    level = doc.GetElement(level_id)
    return level.Name if level is not None else ""


def _nx_describe(value):
    element = _nx_element(value)
    if element is None:
        return None
    return {"id": value, "category": _nx_category(element) or element.__class__.__name__,
            "type": _nx_family_and_type(element), "level": _nx_level_name(element),
            "model": _nx_is_model(element), "level_id": _nx_level_id(element)}


def _nx_row(info):
    row = "- #" + str(info["id"]) + " " + info["category"]
    if info["type"]:
        row += " | " + info["type"]
    if info["level"]:
        row += " | Level: " + info["level"]
    return row


def _nx_groups(infos):
    groups = {}
    order = []
    for info in infos:
        key = (info["category"], info["type"], info["level"])
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(info)
    ranked = sorted(order, key=lambda k: (-len(groups[k]), k))
    lines = []
    for key in ranked[:_NX_GROUP_LINES]:
        members = groups[key]
        line = "- " + str(len(members)) + "x " + key[0]
        if key[1]:
            line += " | " + key[1]
        if key[2]:
            line += " | Level: " + key[2]
        lines.append(line + " | e.g. #" + str(members[0]["id"]))
    if len(ranked) > _NX_GROUP_LINES:
        rest = sum(len(groups[k]) for k in ranked[_NX_GROUP_LINES:])
        lines.append("- ... " + str(len(ranked) - _NX_GROUP_LINES) + " more groups (" + str(rest) + " elements)")
    return lines


def _nx_counts_by_category(infos):
    counts = {}
    for info in infos:
        counts[info["category"]] = counts.get(info["category"], 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(str(count) + " " + (name or "uncategorised") for name, count in ranked)


def _nx_printable(view):
    try:
        return view is not None and not view.IsTemplate and view.CanBePrinted
    except Exception:
        return False


def _nx_shows_any(view, values):
    try:
        for element_id in DB.FilteredElementCollector(doc, view.Id).ToElementIds():
            if _nx_id(element_id) in values:
                return True
    except Exception:
        pass
    return False


def _nx_pick_view(infos):
    """A view showing the changed model elements: the active view if it does, else a plan of their
    most common level, else a 3D view; None lets the cloud fall back to the active view."""
    values = set(info["id"] for info in infos)
    if not values:
        return None
    try:
        active = uidoc.ActiveView if uidoc is not None else None
    except Exception:
        active = None
    if _nx_printable(active) and _nx_shows_any(active, values):
        return active
    levels = {}
    for info in infos:
        if info["level_id"] is not None:
            key = _nx_id(info["level_id"])
            levels[key] = levels.get(key, 0) + 1
    views = [v for v in DB.FilteredElementCollector(doc).OfClass(DB.View) if _nx_printable(v)]
    for level_value, _count in sorted(levels.items(), key=lambda item: -item[1]):
        for view in views:
            if view.ViewType == DB.ViewType.FloorPlan:
                try:
                    if _nx_id(view.GenLevel.Id) == level_value:
                        return view
                except Exception:
                    continue
    for view in views:
        if view.ViewType == DB.ViewType.ThreeD:
            return view
    return None


def _nx_change_report():
    changes = nexus_changes()
    added_ids = list(changes.get("added", []))
    modified_ids = list(changes.get("modified", []))
    deleted_ids = list(changes.get("deleted", []))
    added = [info for info in (_nx_describe(v) for v in added_ids) if info is not None]
    modified = [info for info in (_nx_describe(v) for v in modified_ids) if info is not None]
    modified_model = [info for info in modified if info["model"]]
    touched = [info for info in modified if not info["model"]]

    lines = ["=== CHANGE REPORT ==="]
    lines.append("Committed: {0} added, {1} modified, {2} deleted.".format(
        len(added_ids), len(modified_ids), len(deleted_ids)))
    if not (added_ids or modified_ids or deleted_ids):
        lines.append("Nothing in the model changed.")

    if len(added) + len(modified_model) <= _NX_NAMED_LIMIT:
        # Few enough to act on: name every one, so the next script can address it by id.
        if added:
            lines.append("Added ({0}):".format(len(added)))
            lines.extend(_nx_row(info) for info in added)
        if modified_model:
            lines.append("Modified ({0}):".format(len(modified_model)))
            lines.extend(_nx_row(info) for info in modified_model)
    else:
        # Bulk: counts per category, family/type and level answer "2 walls or 240?" within budget.
        # What the script added stays named while it is few, whatever else changed around it.
        if added and len(added) <= _NX_NAMED_LIMIT:
            lines.append("Added ({0}):".format(len(added)))
            lines.extend(_nx_row(info) for info in added)
        elif added:
            lines.append("Added ({0}), grouped:".format(len(added)))
            lines.extend(_nx_groups(added))
        if modified_model:
            lines.append("Modified model elements ({0}), grouped:".format(len(modified_model)))
            lines.extend(_nx_groups(modified_model))
    if touched:
        if not (added or modified_model) and len(touched) <= _NX_NAMED_LIMIT:
            # Only non-model elements changed (views, levels, types...): that was the point of the run.
            lines.append("Modified ({0}):".format(len(touched)))
            lines.extend(_nx_row(info) for info in touched)
        else:
            lines.append("Also modified ({0}), mostly by Revit's regeneration (views, types, annotations, "
                         "internal elements): {1}".format(len(touched), _nx_counts_by_category(touched)))
    if deleted_ids:
        shown = ", ".join("#" + str(v) for v in sorted(deleted_ids)[:_NX_DELETED_IDS])
        more = " ..." if len(deleted_ids) > _NX_DELETED_IDS else ""
        lines.append("Deleted ({0}): {1}{2}".format(len(deleted_ids), shown, more))
    unresolved = len(added_ids) + len(modified_ids) - len(added) - len(modified)
    if unresolved:
        lines.append("({0} changed ids could not be read back.)".format(unresolved))
    print("\n".join(lines))

    model_changed = [info for info in added if info["model"]] + modified_model
    geometry_changed = bool(model_changed and (added or touched)) or bool(deleted_ids)
    view = _nx_pick_view(model_changed) if geometry_changed else None
    directive = {
        "geometry_changed": geometry_changed,
        "view": view.Name if view is not None else None,
        "view_id": _nx_id(view.Id) if view is not None else None,
        "element_ids": [info["id"] for info in model_changed][:_NX_VIEW_IDS],
        "counts": {"added": len(added_ids), "modified": len(modified_ids), "deleted": len(deleted_ids),
                   "modified_model": len(modified_model)},
    }
    # ensure_ascii=False: IronPython 2.7's encoder decodes .NET strings byte by byte when escaping and
    # raises UnicodeDecodeError on any character U+0080-U+00FF (a view named "Ansicht Süd").
    print("@@nexus " + json.dumps(directive, sort_keys=True, ensure_ascii=False))


_nx_change_report()
