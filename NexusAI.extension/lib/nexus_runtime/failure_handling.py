"""The transaction's IFailuresPreprocessor: record every warning and error, delete the warnings so no
dialog blocks the commit, and roll back when there is an error. Revit-facing.

Failure handling stays modal (forced): with modeless handling Revit may end Commit() with `Pending` and
settle the failures with the person after the handler returned, while a held run's TransactionGroup
must end inside it. Our preprocessor resolves every failure, so no failures dialog appears; one posted
later by another add-in goes to Revit's dialog, which the run guard answers (Cancel: roll back)."""
from Autodesk.Revit import DB

from nexus_runtime.ids import element_id_values


class RecordingFailuresPreprocessor(DB.IFailuresPreprocessor):
    def __init__(self, failure_log):
        self._failure_log = failure_log

    def PreprocessFailures(self, failuresAccessor):
        # Called by Revit inside Commit(); an exception escaping here would reach Revit itself.
        try:
            has_error = False
            for message in list(failuresAccessor.GetFailureMessages()):
                severity = message.GetSeverity()
                ids = element_id_values(message.GetFailingElementIds())
                text = message.GetDescriptionText()
                if severity == DB.FailureSeverity.Warning:
                    self._failure_log.record("warning", text, ids)
                    failuresAccessor.DeleteWarning(message)
                else:
                    self._failure_log.record("error", text, ids)
                    has_error = True
            if has_error:
                return _roll_back(failuresAccessor)
            return DB.FailureProcessingResult.Continue
        except Exception as exc:
            self._failure_log.record("error", "NexusAI could not process Revit's failure messages: " + str(exc))
            return _roll_back(failuresAccessor)


def _roll_back(failures_accessor):
    """ProceedWithRollBack, with the failures cleared so Revit shows no dialog for them afterwards."""
    try:
        options = failures_accessor.GetFailureHandlingOptions()
        options.SetClearAfterRollback(True)
        failures_accessor.SetFailureHandlingOptions(options)
    except Exception:
        pass  # the transaction's own options already ask for it
    return DB.FailureProcessingResult.ProceedWithRollBack


def configure_failure_handling(transaction, preprocessor):
    """Failures go to `preprocessor`, never to a modal dialog; a rollback clears them."""
    options = transaction.GetFailureHandlingOptions()
    options.SetFailuresPreprocessor(preprocessor)
    options.SetClearAfterRollback(True)
    options.SetForcedModalHandling(True)
    transaction.SetFailureHandlingOptions(options)
