"""execute: one script in one Transaction, on Revit's main thread. Revit-facing.

collect  -> the transaction is always rolled back; the script's stdout is the answer.
automate -> committed only if the script succeeded and Revit accepted the commit; Commit() returning
            RolledBack (errors, another add-in's updater...) is a failed run. After a commit the
            epilogue runs read-only (no transaction is open, so Revit refuses any change) and sees
            nexus_changes() = the ids DocumentChanged reported for our transaction.
"""
import hashlib
import itertools

from Autodesk.Revit import DB, UI

from nexus_runtime import protocol, script_runner
from nexus_runtime.change_tracking import DocumentChangeTracker
from nexus_runtime.changes import ChangeSet
from nexus_runtime.failure_handling import RecordingFailuresPreprocessor, configure_failure_handling
from nexus_runtime.failure_log import FailureLog
from nexus_runtime.jobs import monotonic

EPILOGUE_TIMEOUT_S = 60.0
_run_numbers = itertools.count(1)


def transaction_name(request_id):
    """Unique per run, so DocumentChanged can be matched to exactly this transaction."""
    return "NexusAI run {0} ({1})".format(next(_run_numbers), request_id[:60])


def script_namespace(uiapp, uidoc, doc, changes):
    return {
        "__name__": "__main__",
        "doc": doc,
        "uidoc": uidoc,
        "uiapp": uiapp,
        "app": uiapp.Application,
        "DB": DB,
        "UI": UI,
        "nexus_changes": changes.as_message,
    }


def execute(uiapp, message, log, clock=monotonic):
    started = clock()
    request_id = message["request_id"]
    uidoc = uiapp.ActiveUIDocument
    if uidoc is None:
        return protocol.failed_reply_for(message, "NoDocument", "No Revit document is open.")
    doc = uidoc.Document
    if doc.IsReadOnly:
        return protocol.failed_reply_for(message, "DocumentReadOnly", "The active document is read-only.")
    if doc.IsModifiable:
        # Another transaction is open (an edit mode or another add-in): ours could not start.
        return protocol.failed_reply_for(message, "RevitBusy", protocol.BUSY_MESSAGE)

    name = transaction_name(request_id)
    changes = ChangeSet()
    failures = FailureLog()
    namespace = script_namespace(uiapp, uidoc, doc, changes)
    outcome, committed, error = None, False, None
    transaction = DB.Transaction(doc, name)
    try:
        configure_failure_handling(transaction, RecordingFailuresPreprocessor(failures))
        with DocumentChangeTracker(uiapp.Application, doc, name, changes, log):
            try:
                status = transaction.Start()
                if status != DB.TransactionStatus.Started:
                    error = protocol.error_info("TransactionNotStarted",
                                               "Revit did not start the transaction (status {0}).".format(status))
                else:
                    outcome = script_runner.run_script(message["code"], namespace, timeout_s=message["timeout_s"])
                    if not outcome.ok:
                        error = outcome.error
                        transaction.RollBack()
                    elif message["mode"] == "collect":
                        transaction.RollBack()
                    else:
                        status = transaction.Commit()
                        committed = status == DB.TransactionStatus.Committed
                        if not committed:
                            error = _rejected_commit(status, failures)
            finally:
                if transaction.GetStatus() == DB.TransactionStatus.Started:
                    transaction.RollBack()
    except Exception as exc:
        error = protocol.error_info(exc.__class__.__name__, "Revit refused the run: " + _message_of(exc))
    finally:
        transaction.Dispose()

    epilogue_stdout = None
    if committed and message.get("epilogue"):
        epilogue_stdout = run_epilogue(message["epilogue"], script_namespace(uiapp, uidoc, doc, changes))
    return protocol.execute_result(
        request_id,
        ok=error is None,
        committed=committed,
        stdout=outcome.stdout if outcome else "",
        failures=failures.entries(),
        changes=changes.as_message() if committed else protocol.empty_changes(),
        duration_ms=(clock() - started) * 1000.0,
        error_info=error,
        epilogue_stdout=epilogue_stdout,
        timed_out=bool(outcome and outcome.timed_out),
        stdout_truncated=bool(outcome and outcome.stdout_truncated),
    )


def run_epilogue(epilogue, namespace):
    code = epilogue["code"]
    if hashlib.sha256(code.encode("utf-8")).hexdigest() != epilogue["sha256"]:
        return "NexusAI: the change report was not run: its sha256 does not match the code received."
    outcome = script_runner.run_script(code, namespace, script_runner.EPILOGUE_FILENAME, timeout_s=EPILOGUE_TIMEOUT_S)
    if outcome.ok:
        return outcome.stdout
    return outcome.stdout + "\n[change report failed] " + outcome.error["traceback"]


def _rejected_commit(status, failures):
    detail = failures.summary()
    text = "Revit rolled back the transaction (Commit returned {0}); nothing was changed.".format(status)
    if detail:
        text += " Errors: " + detail
    return protocol.error_info("TransactionRolledBack", text)


def _message_of(exc):
    return str(getattr(exc, "Message", None) or exc)
