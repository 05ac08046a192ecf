"""NexusAI Doctor's report: the wording (doctor_checks.json), one entry per check, the doctor_result
message and the text table shown in Revit. Plain Python."""
import io
import json
import os

from nexus_runtime import RUNTIME_VERSION

CHECK_ORDER = ("trace_lines", "traceback_line", "json_unicode", "external_event", "rollback", "export_image",
               "webview2", "server")
_WORDING_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "doctor_checks.json")
_wording = None


def wording():
    global _wording
    if _wording is None:
        with io.open(_WORDING_PATH, encoding="utf-8") as handle:
            _wording = json.load(handle)
    return _wording


def check(check_id, ok, **values):
    """One row: its title, pass/fail, the detail (from the wording's template) and the fallback."""
    text = wording()["checks"][check_id]
    return {"id": check_id, "title": text["title"], "ok": bool(ok),
            "detail": text["passed" if ok else "failed"].format(**values), "fallback": text["fallback"]}


def not_run(check_id, reason):
    text = wording()["checks"][check_id]
    return {"id": check_id, "title": text["title"], "ok": False, "detail": wording()["not_run"].format(reason=reason),
            "fallback": text["fallback"]}


def phrase(key):
    return wording()[key]


def doctor_result(request_id, checks, host_version, python_version):
    by_id = dict((c["id"], c) for c in checks)
    ordered = [by_id[i] for i in CHECK_ORDER if i in by_id] + [c for c in checks if c["id"] not in CHECK_ORDER]
    message = {"type": "doctor_result", "runtime_version": RUNTIME_VERSION, "host_version": host_version,
               "python_version": python_version, "ok": all(c["ok"] for c in ordered), "checks": ordered}
    if request_id:
        message["request_id"] = request_id
    return message


def table_text(result):
    """The report as a fixed-width table: PASS/FAIL, title, detail; a failed row names its fallback."""
    checks = result["checks"]
    lines = [wording()["heading"].format(passed=sum(1 for c in checks if c["ok"]), total=len(checks),
                                         host_version=result["host_version"],
                                         python_version=result["python_version"].split(" (")[0]), ""]
    width = max([len(c["title"]) for c in checks] + [0])
    for entry in checks:
        lines.append(u"{0}  {1}  {2}".format("PASS" if entry["ok"] else "FAIL", entry["title"].ljust(width),
                                             entry["detail"]))
        if not entry["ok"]:
            lines.append(u"      " + wording()["fallback_prefix"] + entry["fallback"])
    return u"\n".join(lines)
