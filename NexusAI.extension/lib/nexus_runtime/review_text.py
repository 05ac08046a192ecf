"""What the review window says about a held change: a title with the counts, and the change report the
epilogue printed (without its machine-readable directive line). Plain Python."""

DIRECTIVE_PREFIX = "@@nexus "  # the epilogue's directive line (cloud/hosts/base.py), not for people
MAX_REPORT_CHARS = 6000


def _plural(count, word):
    return "{0} {1}{2}".format(count, word, "" if count == 1 else "s")


def change_counts(changes):
    parts = []
    for key in ("added", "modified", "deleted"):
        count = len(changes.get(key) or [])
        if count:
            parts.append("{0} {1}".format(count, key))
    return ", ".join(parts) if parts else "no elements changed"


def report_text(epilogue_stdout):
    lines = [line for line in (epilogue_stdout or "").splitlines() if not line.startswith(DIRECTIVE_PREFIX)]
    text = "\n".join(lines).strip("\n")
    if len(text) > MAX_REPORT_CHARS:
        text = text[:MAX_REPORT_CHARS] + "\n... (the full report is in the chat)"
    return text


def review_title(changes):
    return "NexusAI: keep this change? ({0})".format(change_counts(changes))


def review_body(changes, epilogue_stdout, stdout):
    report = report_text(epilogue_stdout)
    if report:
        return report
    if (stdout or "").strip():
        return "The script printed:\n" + report_text(stdout)
    return "The script ran without a change report: " + change_counts(changes) + "."


def highlight_note(selected, isolated, not_isolable=None):
    if not_isolable and selected:
        return "The {0} are selected; the active view '{1}' cannot isolate them (open a plan or 3D view).".format(
            _plural(selected, "changed element"), not_isolable)
    if isolated:
        return "The {0} shown in the active view are selected and isolated until you decide.".format(
            _plural(selected, "changed element"))
    if selected:
        return "The {0} are selected.".format(_plural(selected, "changed element"))
    return "The change is not visible in the active view."
