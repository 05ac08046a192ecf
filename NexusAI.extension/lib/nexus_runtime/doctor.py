"""NexusAI Doctor: checks on the person's real Revit what the fake cannot prove. Revit-facing.

`network_check` runs on a background thread (it opens a websocket of its own); `revit_checks` runs on
Revit's main thread, inside the ExternalEvent handler that picked the doctor job up, so the pickup time
is the ExternalEvent round trip. Every check is caught: a failed check is a row of the report, never an
exception into Revit. The wording is data (doctor_checks.json, doctor_report.py).
"""
import base64
import json
import sys

from Autodesk.Revit import DB

from nexus_runtime import deadline, doctor_report, image_export, protocol, script_runner, webview
from nexus_runtime.guards import OWN_NAME_PREFIX
from nexus_runtime.jobs import monotonic
from nexus_runtime.png import PNG_SIGNATURE
from nexus_runtime.settings import websocket_url

DOCTOR_FILENAME = "<nexus-doctor>"
TRACE_PROBE = "a = 1\nfor i in range(2):\n    a += i\nb = a\n"
TRACEBACK_PROBE = "x = 1\ny = 2\nraise ValueError('NexusAI Doctor probe')\n"
UNICODE_PROBE = u"Ansicht S\u00fcd \u00e9\u00e8 \u20ac \u5efa\u7b51"
SLOW_PICKUP_MS = 2000.0
PROBE_PX = 64


def network_check(settings, transport_factory, clock=monotonic):
    """Background thread: can a websocket of our own, through the system proxy, reach the server?"""
    url = settings.server_url
    route = _proxy_route(url)
    transport = transport_factory()
    started = clock()
    try:
        transport.connect(websocket_url(url), {"Authorization": "Bearer " + settings.token}, 10.0)
    except Exception as exc:
        return doctor_report.check("server", False, url=url, route=route, error=str(exc))
    finally:
        try:
            transport.close()
        except Exception:
            pass  # the probe's socket may already be gone
    return doctor_report.check("server", True, url=url, route=route, ms=int((clock() - started) * 1000))


def _proxy_route(url):
    try:
        from System import Uri
        from System.Net import WebRequest
        proxy = WebRequest.GetSystemWebProxy()
        target = Uri(url)
        if proxy.IsBypassed(target):
            return "direct"
        return "through the proxy " + str(proxy.GetProxy(target))
    except Exception as exc:
        return "the system proxy could not be read: {0}".format(exc)


def revit_checks(uiapp, job, settings, log, clock=monotonic):
    """Main thread: the checks that need Revit, IronPython and WPF. Returns the rows."""
    rows = []
    for probe in (_trace_lines, _traceback_line, _json_unicode):
        rows.append(_guarded(probe.__name__, probe))
    rows.append(_guarded("_external_event", lambda: _external_event(job)))
    rows.append(_guarded("_rollback", lambda: _rollback(uiapp)))
    rows.append(_guarded("_export_image", lambda: _export_image(uiapp, log)))
    rows.append(_guarded("_webview2", lambda: _webview2(settings)))
    return rows


def _guarded(name, probe):
    check_id = name.lstrip("_")
    try:
        return probe()
    except Exception as exc:
        return doctor_report.check(check_id, False, **_failure_values(check_id, exc))


def _failure_values(check_id, exc):
    text = "{0}: {1}".format(exc.__class__.__name__, getattr(exc, "Message", None) or exc)
    return {"lines": text, "inserted": "?", "line": text, "text": UNICODE_PROBE, "error": text, "ms": "?", "problem": text,
            "reason": text, "count": "?", "view": "?", "width": "?", "height": "?"}


def _trace_lines():
    seen = []

    def trace(frame, event, arg):
        if frame.f_code.co_filename != DOCTOR_FILENAME:
            return None
        if event == "line":
            seen.append(frame.f_lineno)
        return trace

    compiled = deadline.compile_with_checks(TRACE_PROBE, DOCTOR_FILENAME)
    saved = sys.gettrace()
    sys.settrace(trace)
    try:
        eval(compiled, {deadline.CHECK_NAME: lambda: None})
    finally:
        sys.settrace(saved)
    inserted = deadline.CHECK_NAME in compiled.co_names  # False: the text could not be rewritten here
    ok = bool(seen) and seen[0] == 1 and seen[-1] == 4 and seen.count(3) == 2 and set(seen) <= set([1, 2, 3, 4])
    return doctor_report.check("trace_lines", ok and inserted, lines=",".join(str(n) for n in seen) or "none",
                               inserted="yes" if inserted else "no")


def _traceback_line():
    outcome = script_runner.run_script(TRACEBACK_PROBE, {"__name__": "__main__"}, DOCTOR_FILENAME, timeout_s=10)
    line = (outcome.error or {}).get("line")
    return doctor_report.check("traceback_line", line == 3, line=line)


def _json_unicode():
    try:
        text = json.loads(json.dumps({"v": UNICODE_PROBE}, ensure_ascii=False))["v"]
        wire = protocol.decode(protocol.encode({"type": "ping", "nonce": UNICODE_PROBE}))["nonce"]
        ok, error = text == UNICODE_PROBE and wire == UNICODE_PROBE, "the text came back changed"
    except Exception as exc:
        ok, error = False, str(exc)
    return doctor_report.check("json_unicode", ok, text=UNICODE_PROBE, error=error)


def _external_event(job):
    if job is None or job.claimed_at is None:
        return doctor_report.not_run("external_event", "the Doctor did not come through the ExternalEvent")
    ms = (job.claimed_at - job.created) * 1000.0
    return doctor_report.check("external_event", ms <= SLOW_PICKUP_MS, ms=int(ms))


def _rollback(uiapp):
    uidoc = uiapp.ActiveUIDocument
    if uidoc is None:
        return doctor_report.not_run("rollback", doctor_report.phrase("no_document"))
    doc = uidoc.Document
    if doc.IsReadOnly or doc.IsModifiable:
        return doctor_report.not_run("rollback", doctor_report.phrase("busy_document"))
    level = DB.FilteredElementCollector(doc).OfClass(DB.Level).FirstElement()
    if level is None:
        return doctor_report.not_run("rollback", "the model has no level to place a probe wall on")
    before = DB.FilteredElementCollector(doc).WhereElementIsNotElementType().GetElementCount()
    transaction = DB.Transaction(doc, OWN_NAME_PREFIX + "Doctor probe (always rolled back)")
    try:
        transaction.Start()
        line = DB.Line.CreateBound(DB.XYZ(0, 0, level.Elevation), DB.XYZ(10, 0, level.Elevation))
        probe_id = DB.Wall.Create(doc, line, level.Id, False).Id
        transaction.RollBack()
    finally:
        if transaction.GetStatus() == DB.TransactionStatus.Started:
            transaction.RollBack()
        transaction.Dispose()
    after = DB.FilteredElementCollector(doc).WhereElementIsNotElementType().GetElementCount()
    if doc.GetElement(probe_id) is not None or after != before:
        return doctor_report.check("rollback", False, problem="{0} elements before, {1} after the rollback".format(
            before, after))
    return doctor_report.check("rollback", True, count=after)


def _export_image(uiapp, log):
    if uiapp.ActiveUIDocument is None:
        return doctor_report.not_run("export_image", doctor_report.phrase("no_document"))
    reply = image_export.export_view(uiapp, {"type": "export_view", "request_id": "doctor", "max_px": PROBE_PX}, log)
    if not reply.get("ok"):
        return doctor_report.check("export_image", False, problem=reply.get("error"))
    data = base64.b64decode(reply["png_base64"])
    if bytearray(data[:8]) != PNG_SIGNATURE:
        return doctor_report.check("export_image", False, problem="the exported file is not a PNG")
    return doctor_report.check("export_image", True, view=reply["view"], width=reply["width"],
                               height=reply["height"])


def _webview2(settings):
    embed, reason = webview.decide(settings)
    return doctor_report.check("webview2", embed, reason=reason)
