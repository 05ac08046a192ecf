"""Show in Revit, the plain part: which of the asked elements still exist (each once, in the order asked),
and what to say when none does, or when the active view cannot isolate. Plain Python."""

NO_DOCUMENT = "No Revit document is open: open the model, then try again."
LISTED_IDS = 10


def split_existing(element_ids, exists):
    """(present, missing): the ids `exists(id)` finds in the document and the others, without duplicates."""
    seen = set()
    present, missing = [], []
    for element_id in element_ids:
        if element_id in seen:
            continue
        seen.add(element_id)
        (present if exists(element_id) else missing).append(element_id)
    return present, missing


def listed(element_ids):
    text = ", ".join("#{0}".format(i) for i in element_ids[:LISTED_IDS])
    if len(element_ids) > LISTED_IDS:
        text += " and {0} more".format(len(element_ids) - LISTED_IDS)
    return text


def nothing_left(missing, document_title):
    if len(missing) == 1:
        head = "Element {0} is not in '{1}' any more".format(listed(missing), document_title)
    else:
        head = "None of these {0} elements is in '{1}' any more ({2})".format(len(missing), document_title,
                                                                            listed(missing))
    return head + ": deleted since, or the result is from another document."


def cannot_isolate(view_name):
    return "The active view '{0}' cannot isolate elements (schedules, sheets and templates cannot).".format(view_name)
