"""Waiting for the decision on a held change, inside the ExternalEvent handler's call stack. Revit-facing.

The TransactionGroup must close before the handler returns, and Revit fires no ExternalEvent while a
modal window is up, so the wait happens here, on the main thread: first quietly (serving the cloud's
export_view and answering nothing else), then, when nothing has come for a moment, in the review window
with the changed elements selected and isolated. See holds.py for who may decide and when.
"""
import time

from nexus_runtime import review_text
from nexus_runtime.holds import ReviewPacing
from nexus_runtime.review_view import ReviewHighlight
from nexus_runtime.review_window import ReviewWindow

QUIET_POLL_S = 0.05


def wait_for_decision(uiapp, run, held_result, services, guard, log):
    """Send the held result, then return once `run` is decided (keep, discard or timeout)."""
    pacing = ReviewPacing(run, services.settings().review_window_after_s)

    def serve():
        with guard.allowing_own_export():
            return services.pump(uiapp)

    services.send(held_result)
    if _wait_quietly(pacing, serve, until_window=True) == ReviewPacing.DONE:
        return
    changes = held_result["changes"]
    highlight = ReviewHighlight(uiapp.ActiveUIDocument, changes["added"] + changes["modified"], log).apply()
    try:
        window = ReviewWindow(run, pacing, serve, review_text.review_title(changes),
                              review_text.review_body(changes, held_result.get("epilogue_stdout"),
                                                      held_result.get("stdout")),
                              review_text.highlight_note(highlight.selected, highlight.isolated), log)
        window.wait_for_decision()
    except Exception as exc:  # no window: the chat page and the timeout can still decide
        log.write("the review window could not be shown: {0}".format(exc))
        pacing.window_shown = True
        _wait_quietly(pacing, serve, until_window=False)
    finally:
        highlight.restore()


def _wait_quietly(pacing, serve, until_window):
    while True:
        step = pacing.next_step()
        if step == ReviewPacing.DONE or (until_window and step == ReviewPacing.SHOW_WINDOW):
            return step
        if serve():
            pacing.note_activity()
        else:
            time.sleep(QUIET_POLL_S)
