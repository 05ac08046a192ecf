"""Host-protocol messages (shared_contract/host/*.json) as plain dicts: build, encode, decode, check.

The cloud validates everything with JSON Schema; this module checks what the runtime relies on, so a
malformed command gets an `error` reply naming the field instead of an exception on some thread.
"""
import json
import numbers

from nexus_runtime import RUNTIME_VERSION

HOST_APP = "revit"
CAPABILITIES = ["execute", "export_view", "context", "hold", "doctor", "abort", "show_elements"]
CANCELLED_BEFORE = "cancelled before it ran: nothing ran, the model is unchanged"
BUSY_MESSAGE = "Revit is busy (a dialog or an edit mode may be open; press Esc)"
NO_DOCUMENT_TITLE = "(no document open)"

try:
    STRING_TYPES = (str, unicode)  # noqa: F821 (IronPython 2.7)
except NameError:
    STRING_TYPES = (str,)


ELEMENT_ID_MIN, ELEMENT_ID_MAX = -2 ** 63, 2 ** 63 - 1  # ElementId(Int64); DB.ElementId refuses the rest


class ProtocolError(ValueError):
    """A message that cannot be served; the text names the offending field."""


def encode(message):
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))


def decode(text):
    try:
        message = json.loads(text)
    except ValueError as exc:
        raise ProtocolError("not JSON: " + str(exc))
    if not isinstance(message, dict):
        raise ProtocolError("expected a JSON object")
    if not isinstance(message.get("type"), STRING_TYPES):
        raise ProtocolError("type: missing or not a string")
    return message


def hello(host_version, python_version, document_title, host_id=None):
    message = {
        "type": "hello",
        "host_app": HOST_APP,
        "host_version": host_version or "unknown",
        "runtime_version": RUNTIME_VERSION,
        "python_version": python_version or "unknown",
        "document": {"title": document_title or NO_DOCUMENT_TITLE},
        "capabilities": list(CAPABILITIES),
    }
    if host_id:
        message["host_id"] = host_id
    return message


def ping(nonce=None):
    message = {"type": "ping"}
    if nonce:
        message["nonce"] = nonce
    return message


def pong(nonce=None):
    message = {"type": "pong"}
    if nonce is not None:
        message["nonce"] = nonce
    return message


def decided(request_id, decision, by):
    """The person (or the hold timeout) decided a held run here; the cloud stops waiting for the chat page."""
    return {"type": "decided", "request_id": request_id, "decision": decision, "by": by}


def error(message, request_id=None):
    return {"type": "error", "request_id": request_id, "message": message or "error"}


def empty_changes():
    return {"added": [], "modified": [], "deleted": []}


def execute_result(request_id, ok, committed, stdout, failures, changes, duration_ms,
                   error_info=None, epilogue_stdout=None, timed_out=False, stdout_truncated=False,
                   held=False, extra=None):
    """`extra`: optional fields (blocked, dialogs, external_changes, details), added when not empty."""
    message = {
        "type": "execute_result",
        "request_id": request_id,
        "ok": bool(ok),
        "committed": bool(committed),
        "stdout": stdout or "",
        "error": error_info,
        "failures": list(failures or []),
        "changes": changes or empty_changes(),
        "duration_ms": max(0, int(duration_ms)),
    }
    if epilogue_stdout is not None:
        message["epilogue_stdout"] = epilogue_stdout
    if timed_out:
        message["timed_out"] = True
    if stdout_truncated:
        message["stdout_truncated"] = True
    if held:
        message["held"] = True
    for key, value in (extra or {}).items():
        if value:
            message[key] = value
    return message


def error_info(kind, message, line=None, traceback_text=""):
    return {"type": kind, "message": message, "line": line, "traceback": traceback_text or ""}


def busy_execute_result(request_id, waited_ms):
    """What the cloud gets when Revit never picked the job up: nothing ran, nothing changed."""
    return execute_result(request_id, False, False, "", [], empty_changes(), waited_ms,
                          error_info=error_info("RevitBusy", BUSY_MESSAGE), timed_out=True)


def export_view_ok(request_id, png_base64, width, height, view_name):
    return {"type": "export_view_result", "request_id": request_id, "ok": True,
            "png_base64": png_base64, "width": int(width), "height": int(height), "view": view_name}


def export_view_error(request_id, message):
    return {"type": "export_view_result", "request_id": request_id, "ok": False, "error": message}


def context_ok(request_id, context):
    return {"type": "context_result", "request_id": request_id, "ok": True, "context": context}


def context_error(request_id, message):
    return {"type": "context_result", "request_id": request_id, "ok": False, "error": message}


def show_elements_result(request_id, shown, missing, zoomed, view_name, document_title):
    """The elements now selected in Revit (and zoomed to, when `zoomed`), and those that no longer exist."""
    return {"type": "show_elements_result", "request_id": request_id, "ok": True, "shown": [int(i) for i in shown],
            "missing": [int(i) for i in missing], "zoomed": bool(zoomed), "view": view_name,
            "document": document_title}


def show_elements_error(request_id, message, missing=None):
    reply = {"type": "show_elements_result", "request_id": request_id, "ok": False, "error": message}
    if missing:
        reply["missing"] = [int(i) for i in missing]
    return reply


def busy_reply_for(message, waited_ms):
    if message.get("type") == "show_elements":
        return show_elements_error(message.get("request_id"), BUSY_MESSAGE)
    if message.get("type") == "doctor":
        return error(BUSY_MESSAGE, message.get("request_id"))
    if message.get("type") == "export_view":
        return export_view_error(message.get("request_id"), BUSY_MESSAGE)
    if message.get("type") == "context":
        return context_error(message.get("request_id"), BUSY_MESSAGE)
    return busy_execute_result(message.get("request_id"), waited_ms)


def failed_reply_for(message, kind, text):
    """A reply for a job that could not run at all (no document, internal fault)."""
    if message.get("type") == "show_elements":
        return show_elements_error(message.get("request_id"), text)
    if message.get("type") == "doctor":
        return error(text, message.get("request_id"))
    if message.get("type") == "export_view":
        return export_view_error(message.get("request_id"), text)
    if message.get("type") == "context":
        return context_error(message.get("request_id"), text)
    return execute_result(message.get("request_id"), False, False, "", [], empty_changes(), 0,
                          error_info=error_info(kind, text))


def cancelled_reply_for(message):
    """The reply for a job abandoned before Revit picked it up, because its run was cancelled."""
    reply = failed_reply_for(message, "Cancelled", CANCELLED_BEFORE)
    if reply.get("type") == "execute_result":
        reply["cancelled"] = True
    return reply


def aborted(request_id, text):
    """The answer to an abort that found nothing pending, running or held under `request_id`."""
    return {"type": "aborted", "request_id": request_id, "state": "none", "message": text}


def _require_request_id(message):
    request_id = message.get("request_id")
    if not isinstance(request_id, STRING_TYPES) or not request_id or len(request_id) > 200:
        raise ProtocolError("request_id: required, a non-empty string of at most 200 characters")
    return request_id


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_execute(message):
    _require_request_id(message)
    if message.get("mode") not in ("collect", "automate"):
        raise ProtocolError("mode: must be 'collect' or 'automate'")
    if not isinstance(message.get("code"), STRING_TYPES):
        raise ProtocolError("code: required, a string")
    timeout_s = message.get("timeout_s")
    if not _is_number(timeout_s) or timeout_s <= 0:
        raise ProtocolError("timeout_s: required, a number above 0")
    epilogue = message.get("epilogue")
    if epilogue is not None:
        if not isinstance(epilogue, dict):
            raise ProtocolError("epilogue: must be an object")
        for key in ("code", "sha256", "capability_version"):
            if not isinstance(epilogue.get(key), STRING_TYPES):
                raise ProtocolError("epilogue/" + key + ": required, a string")
    hold = message.get("hold")
    if hold is not None and not isinstance(hold, bool):
        raise ProtocolError("hold: must be a boolean")
    return message


def check_context(message):
    _require_request_id(message)
    return message


def check_doctor(message):
    _require_request_id(message)
    return message


def check_export_view(message):
    _require_request_id(message)
    max_px = message.get("max_px")
    if isinstance(max_px, bool) or not isinstance(max_px, numbers.Integral) or not 16 <= max_px <= 8000:
        raise ProtocolError("max_px: required, an integer from 16 to 8000")
    view = message.get("view")
    if view is not None and not isinstance(view, STRING_TYPES):
        raise ProtocolError("view: must be a string")
    element_ids = message.get("element_ids")
    if element_ids is not None:
        if not isinstance(element_ids, list):
            raise ProtocolError("element_ids: must be a list of integers")
        _check_element_ids(element_ids)
    return message


SHOW_ELEMENTS_MAX = 1000


def check_show_elements(message):
    _require_request_id(message)
    element_ids = message.get("element_ids")
    if not isinstance(element_ids, list) or not element_ids or len(element_ids) > SHOW_ELEMENTS_MAX:
        raise ProtocolError("element_ids: required, a list of 1 to {0} element ids".format(SHOW_ELEMENTS_MAX))
    _check_element_ids(element_ids)
    return message


def _check_element_ids(element_ids):
    if not all(isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in element_ids):
        raise ProtocolError("element_ids: must be a list of integers")
    if not all(ELEMENT_ID_MIN <= i <= ELEMENT_ID_MAX for i in element_ids):
        raise ProtocolError("element_ids: Revit element ids are 64-bit integers; {0} is out of range".format(
            next(i for i in element_ids if not ELEMENT_ID_MIN <= i <= ELEMENT_ID_MAX)))
