"""What the guards around one run saw: operations they blocked, dialogs they dismissed, other documents
that changed. Plus the rule for dismissing a dialog. Plain Python (the Revit-facing guards.py feeds it).
"""
import threading

# Win32 dialog result codes (what DialogBoxShowingEventArgs.OverrideResult takes).
IDOK, IDCANCEL, IDABORT, IDRETRY, IDIGNORE, IDYES, IDNO, IDCLOSE = 1, 2, 3, 4, 5, 6, 7, 8

# MessageBoxShowingEventArgs.DialogType (the MB_ button set, low four bits) -> the safest answers first:
# never accept something unknown when declining is possible.
_MESSAGE_BOX_ANSWERS = {
    0: (IDOK,),  # OK
    1: (IDCANCEL, IDOK),  # OK / Cancel
    2: (IDABORT, IDIGNORE, IDRETRY),  # Abort / Retry / Ignore
    3: (IDCANCEL, IDNO, IDYES),  # Yes / No / Cancel
    4: (IDNO, IDYES),  # Yes / No
    5: (IDCANCEL, IDRETRY),  # Retry / Cancel
    6: (IDCANCEL,),  # Cancel / Try again / Continue
}
# A TaskDialog with only custom buttons (command links) answers none of the standard codes: its buttons
# are 1001, 1002... in the order shown. The last one tried first: Revit lists the way out last ("Cancel",
# "Do not ...") and the action it proposes first. Whatever the button does inside a run is undone if the
# run fails; the answer is reported to the model either way.
FIRST_CUSTOM_BUTTON = 1001
CUSTOM_BUTTONS_TRIED = 10
CUSTOM_BUTTON_ANSWERS = tuple(range(FIRST_CUSTOM_BUTTON + CUSTOM_BUTTONS_TRIED - 1, FIRST_CUSTOM_BUTTON - 1, -1))
_TASK_DIALOG_ANSWERS = (IDCANCEL, IDCLOSE, IDNO, IDOK) + CUSTOM_BUTTON_ANSWERS
_OTHER_DIALOG_ANSWERS = (IDCANCEL, IDCLOSE, IDOK)

OPERATION_LABELS = {
    "DocumentSaving": "save",
    "DocumentSavingAs": "save-as",
    "DocumentClosing": "close",
    "DocumentSynchronizingWithCentral": "sync with central",
    "FileExporting": "export",
}


def dismissal_codes(dialog_type=None, is_task_dialog=False):
    """The result codes to try, in order, to dismiss a dialog without accepting what it proposes."""
    if dialog_type is not None:
        return _MESSAGE_BOX_ANSWERS.get(int(dialog_type) & 0xF, (IDCANCEL, IDOK))
    return _TASK_DIALOG_ANSWERS if is_task_dialog else _OTHER_DIALOG_ANSWERS


def blocked_label(event_name, document_title, detail=None, cancelled=True):
    """"save of 'Project1'", "export of 'Project1' (DWG)"..."""
    text = "{0} of '{1}'".format(OPERATION_LABELS.get(event_name, event_name), document_title)
    if detail:
        text += " ({0})".format(detail)
    if not cancelled:
        text += " (Revit did not let it be blocked)"
    return text


class GuardLog(object):
    def __init__(self):
        self._blocked = []
        self._dialogs = []
        self._changed_documents = []
        self._lock = threading.Lock()

    def blocked(self, event_name, document_title, detail=None, cancelled=True):
        label = blocked_label(event_name, document_title, detail, cancelled)
        with self._lock:
            if label not in self._blocked:
                self._blocked.append(label)

    def dialog(self, message, dismissed, code=None):
        text = message or "(a dialog without text)"
        if code is not None and code >= FIRST_CUSTOM_BUTTON:
            text += " [answered with its button {0}: it had only custom buttons]".format(code - FIRST_CUSTOM_BUTTON + 1)
        with self._lock:
            self._dialogs.append({"message": text, "dismissed": bool(dismissed)})

    def other_document_changed(self, document_title):
        with self._lock:
            if document_title not in self._changed_documents:
                self._changed_documents.append(document_title)

    def changed_documents(self):
        with self._lock:
            return list(self._changed_documents)

    def result_fields(self):
        """The optional execute_result fields: only those with something to say."""
        with self._lock:
            fields = {}
            if self._blocked:
                fields["blocked"] = list(self._blocked)
            if self._dialogs:
                fields["dialogs"] = [dict(d) for d in self._dialogs]
            return fields


def other_document_error(changed_titles, run_title):
    names = ", ".join("'{0}'".format(t) for t in changed_titles)
    return ("The script changed another open document ({0}); a NexusAI run may only change the document it "
            "runs in ('{1}'). Everything was rolled back.").format(names, run_title)
