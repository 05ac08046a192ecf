"""execute: one script in one Transaction, on Revit's main thread, inside the run guards. Revit-facing.

collect  -> the transaction is always rolled back; the script's stdout is the answer.
automate -> committed only if the script succeeded and Revit accepted the commit; Commit() returning
            RolledBack (errors, another add-in's updater...) is a failed run. After a commit the
            epilogue runs read-only (no transaction is open, so Revit refuses any change) and sees
            nexus_changes() = the ids DocumentChanged reported for our transaction.
hold     -> (automate with `hold: true`) the transaction runs inside a TransactionGroup. Once the change is
            committed and reported, the result goes out with `held: true` while the group stays open
            until the person decides (hold_review.py, holds.py): Keep assimilates the group into one
            Undo step, Discard or the hold timeout rolls it back. The final result answers the cloud's
            `decide`; it is returned here only when that decide has already arrived.
Around every run: guards.py (save, close, sync and export blocked; other documents protected; dialogs
dismissed), the edits made since the previous run (`external_changes`, reported once), and after any
rollback a check that no earlier commit was lost (integrity.py).
"""
import hashlib
import itertools

from Autodesk.Revit import DB, UI

from nexus_runtime import hold_review, protocol, script_runner
from nexus_runtime.change_tracking import DocumentChangeTracker
from nexus_runtime.changes import ChangeSet
from nexus_runtime.external_tracking import document_key
from nexus_runtime.failure_handling import RecordingFailuresPreprocessor, configure_failure_handling
from nexus_runtime.failure_log import FailureLog
from nexus_runtime.guard_log import GuardLog, other_document_error
from nexus_runtime.guards import OWN_NAME_PREFIX, RunGuard
from nexus_runtime.holds import BY_REVIT, DISCARD, KEEP
from nexus_runtime.integrity import CommitCheck
from nexus_runtime.jobs import monotonic
from nexus_runtime.links import collect_links
from nexus_runtime.run_services import RunServices

EPILOGUE_TIMEOUT_S = 60.0
_run_numbers = itertools.count(1)


def transaction_name(request_id):
    """Unique per run, so DocumentChanged can be matched to exactly this transaction."""
    return "{0}run {1} ({2})".format(OWN_NAME_PREFIX, next(_run_numbers), request_id[:60])


def group_name(request_id):
    return "{0}change held for review ({1})".format(OWN_NAME_PREFIX, request_id[:60])


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
        "links": collect_links(doc),  # linked models, read-only (links.py)
    }


class RunState(object):
    """What one run produced so far, turned into execute_result messages by `result()`."""

    def __init__(self, message, started, clock):
        self.message = message
        self.started = started
        self.clock = clock
        self.outcome = None
        self.committed = False
        self.rolled_back = False
        self.pending = False  # Commit returned Pending: Revit settles the failures after the handler returns
        self.error = None
        self.changes = ChangeSet()
        self.failures = FailureLog()
        self.epilogue_stdout = None
        self.extra = {}

    def fail(self, kind, text):
        if self.error is None:
            self.error = protocol.error_info(kind, text)
        else:
            self.error["message"] += "\n" + text

    def result(self, held=False, details=None, guard_log=None):
        extra = dict(self.extra)
        if guard_log is not None:
            extra.update(guard_log.result_fields())
        if details:
            extra["details"] = details
        outcome = self.outcome
        return protocol.execute_result(
            self.message["request_id"],
            ok=self.error is None,
            committed=self.committed and not held,
            stdout=outcome.stdout if outcome else "",
            failures=self.failures.entries(),
            changes=self.changes.as_message() if (self.committed or held) else protocol.empty_changes(),
            duration_ms=(self.clock() - self.started) * 1000.0,
            error_info=self.error,
            epilogue_stdout=self.epilogue_stdout,
            timed_out=bool(outcome and outcome.timed_out),
            stdout_truncated=bool(outcome and outcome.stdout_truncated),
            held=held,
            extra=extra,
        )


def execute(uiapp, message, log, services=None, clock=monotonic):
    """The execute_result to send now, or None when a held run's result answers the cloud's decide later."""
    services = services or RunServices(log)
    started = clock()
    uidoc = uiapp.ActiveUIDocument
    if uidoc is None:
        return protocol.failed_reply_for(message, "NoDocument", "No Revit document is open.")
    doc = uidoc.Document
    if doc.IsReadOnly:
        return protocol.failed_reply_for(message, "DocumentReadOnly", "The active document is read-only.")
    if doc.IsModifiable:
        # Another transaction is open (an edit mode or another add-in): ours could not start.
        return protocol.failed_reply_for(message, "RevitBusy", protocol.BUSY_MESSAGE)

    if message["mode"] == "automate" and message.get("hold") and not services.can_send():
        return protocol.failed_reply_for(message, "HoldUnsupported", "This runtime cannot hold a change for review.")

    state = RunState(message, started, clock)
    with services.running():
        state.extra["external_changes"] = services.external.take(document_key(doc), doc.Title)
        guard_log = GuardLog()
        with RunGuard(uiapp, doc, guard_log, log) as guard:
            check = CommitCheck.capture(doc, services.kept_ids(document_key(doc)))
            if message["mode"] == "automate" and message.get("hold"):
                reply = _run_held(uiapp, uidoc, doc, state, services, guard, guard_log, check, log)
            else:
                _run_transaction(uiapp, uidoc, doc, state, guard_log, log, services)
                _after_run(uiapp, uidoc, doc, state, services, check)
                reply = state.result(guard_log=guard_log)
    return reply


def _run_held(uiapp, uidoc, doc, state, services, guard, guard_log, check, log):
    request_id = state.message["request_id"]
    group = DB.TransactionGroup(doc, group_name(request_id))
    try:
        status = group.Start()
        if status != DB.TransactionStatus.Started:
            state.fail("TransactionNotStarted", "Revit did not start the transaction group (status {0}).".format(status))
            return state.result(guard_log=guard_log)
        _run_transaction(uiapp, uidoc, doc, state, guard_log, log, services)
        if not state.committed or state.changes.is_empty():
            # Nothing to review: a failed run is already rolled back, an empty one changed nothing.
            if state.committed:
                group.Assimilate()
            elif not state.pending:  # a group cannot end while its transaction is pending
                group.RollBack()
            _after_run(uiapp, uidoc, doc, state, services, check)
            return state.result(guard_log=guard_log)

        state.epilogue_stdout = _epilogue(uiapp, uidoc, doc, state)
        run = services.holds.begin(request_id, services.settings().hold_timeout_s)
        held = state.result(held=True, guard_log=guard_log)
        state.extra.pop("external_changes", None)  # reported once, with the held result
        try:
            hold_review.wait_for_decision(uiapp, run, held, services, guard, log,
                                          review=bool(state.message.get("review")))
        except Exception as exc:
            log.write("waiting for the decision on {0} failed: {1}".format(request_id, exc))
            run.decide(DISCARD, BY_REVIT)
        _apply_decision(group, run, state)
        _after_run(uiapp, uidoc, doc, state, services, check, epilogue_done=True)
        details = {"decision": run.decision, "decided_by": run.decided_by}
        return services.holds.settle(run, state.result(details=details, guard_log=guard_log))
    finally:
        _close_group(group, state, log)


def _close_group(group, state, log):
    try:
        if group.GetStatus() == DB.TransactionStatus.Started and not state.pending:
            group.RollBack()
        group.Dispose()
    except Exception as exc:  # never let the group's end take the run's answer with it
        log.write("the held run's transaction group could not be closed: {0}".format(_message_of(exc)))


def _apply_decision(group, run, state):
    if run.decision == KEEP:
        status = group.Assimilate()
        if status != DB.TransactionStatus.Committed:
            state.committed = False
            state.fail("TransactionRolledBack", "Revit did not keep the change (Assimilate returned {0}).".format(status))
    else:
        group.RollBack()
        state.committed = False
        state.rolled_back = True


def _run_transaction(uiapp, uidoc, doc, state, guard_log, log, services):
    message = state.message
    name = transaction_name(message["request_id"])
    namespace = script_namespace(uiapp, uidoc, doc, state.changes)
    transaction = DB.Transaction(doc, name)
    try:
        configure_failure_handling(transaction, RecordingFailuresPreprocessor(state.failures))
        with DocumentChangeTracker(uiapp.Application, doc, name, state.changes, log):
            try:
                status = transaction.Start()
                if status != DB.TransactionStatus.Started:
                    state.fail("TransactionNotStarted", "Revit did not start the transaction (status {0}).".format(status))
                    return
                abort = services.aborts.start(message["request_id"])
                try:
                    state.outcome = script_runner.run_script(message["code"], namespace,
                                                             timeout_s=message["timeout_s"], abort=abort)
                finally:
                    services.aborts.finish(message["request_id"])
                if state.outcome.cancelled:
                    state.extra["cancelled"] = True
                changed_elsewhere = guard_log.changed_documents()
                if not state.outcome.ok:
                    state.error = state.outcome.error
                    transaction.RollBack()
                elif changed_elsewhere:
                    state.fail("OtherDocumentChanged", other_document_error(changed_elsewhere, doc.Title))
                    transaction.RollBack()
                elif message["mode"] == "collect":
                    transaction.RollBack()
                else:
                    status = transaction.Commit()
                    state.committed = status == DB.TransactionStatus.Committed
                    if status == DB.TransactionStatus.Pending:
                        state.pending = True
                        state.error = _pending_commit(state.failures)
                    elif not state.committed:
                        state.error = _rejected_commit(status, state.failures)
            finally:
                if transaction.GetStatus() == DB.TransactionStatus.Started:
                    transaction.RollBack()
    except Exception as exc:
        state.fail(exc.__class__.__name__, "Revit refused the run: " + _message_of(exc))
    finally:
        transaction.Dispose()
        state.rolled_back = not state.committed


def _after_run(uiapp, uidoc, doc, state, services, check, epilogue_done=False):
    """The epilogue after a commit; the lost-commit check after a rollback; what a kept change touched."""
    if state.committed:
        if not epilogue_done:
            state.epilogue_stdout = _epilogue(uiapp, uidoc, doc, state)
        kept = state.changes.as_message()
        services.remember_kept(document_key(doc), kept["added"] + kept["modified"])
        return
    if state.rolled_back and not state.pending:
        problems = check.problems(doc)
        for problem in problems:
            state.failures.record("error", "NexusAI: an earlier commit may have been lost: " + problem)
        if problems:
            state.fail("EarlierCommitLost", "NexusAI: after the rollback the document is not as it was before the "
                       "run, so an earlier commit may have been lost: " + "; ".join(problems))


def _epilogue(uiapp, uidoc, doc, state):
    epilogue = state.message.get("epilogue")
    if not epilogue:
        return None
    return run_epilogue(epilogue, script_namespace(uiapp, uidoc, doc, state.changes))


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


def _pending_commit(failures):
    detail = failures.summary()
    text = ("Revit has not finished this run: it is settling the failures of its commit with the person "
            "(Commit returned Pending), so the change may still be kept or undone there. Re-inspect the model "
            "before the next run.")
    if detail:
        text += " Errors: " + detail
    return protocol.error_info("TransactionPending", text)


def _message_of(exc):
    return str(getattr(exc, "Message", None) or exc)
