"""Waiting for the decision on a held change, inside the ExternalEvent handler's call stack. Revit-facing.

The TransactionGroup must close before the handler returns, and Revit fires no ExternalEvent while a
modal window is up, so the wait happens here, on the main thread: first quietly (serving the cloud's
export_view and answering nothing else), then, when nothing has come for a moment, in the review window
with the changed elements selected and isolated. See holds.py for who may decide and when.
"""
from nexus_runtime import protocol, review_text
from nexus_runtime.holds import BY_CLOUD, ReviewPacing
from nexus_runtime.jobs import monotonic
from nexus_runtime.message_pump import MessagePump
from nexus_runtime.review_view import ReviewHighlight
from nexus_runtime.review_window import ReviewWindow

QUIET_POLL_S = 0.05
NO_WINDOW_HOLD_S = 60.0  # without the review window only the chat page can decide: do not hold Revit long


def wait_for_decision(uiapp, run, held_result, services, guard, log, review=False):
    """Send the held result, then return once `run` is decided (keep, discard or timeout).

    With `review` (the cloud expects the person to review: policy ask) the window opens at once.
    A decision taken here (the window, the timeout) is reported to the cloud with `decided`, which
    ends its own wait for the person; the final result still answers the cloud's `decide`.
    """
    pacing = ReviewPacing(run, 0 if review else services.settings().review_window_after_s)
    try:
        _wait(uiapp, run, held_result, services, guard, log, pacing)
    finally:
        if run.decision is not None and run.decided_by != BY_CLOUD:
            services.send(protocol.decided(run.request_id, run.decision, run.decided_by))


def _wait(uiapp, run, held_result, services, guard, log, pacing):

    def serve():
        with guard.allowing_own_export():
            return services.pump(uiapp)

    pump = MessagePump()
    services.send(held_result)
    if _wait_quietly(pacing, serve, pump, until_window=True) == ReviewPacing.DONE:
        return
    changes = held_result["changes"]
    highlight = ReviewHighlight(uiapp.ActiveUIDocument, changes["added"] + changes["modified"], log).apply()
    try:
        window = ReviewWindow(run, pacing, serve, review_text.review_title(changes),
                              review_text.review_body(changes, held_result.get("epilogue_stdout"),
                                                      held_result.get("stdout")),
                              review_text.highlight_note(highlight.selected, highlight.isolated,
                                                         highlight.not_isolable), log)
        window.wait_for_decision()
    except Exception as exc:  # no window: the chat page and a short timeout can still decide
        log.write("the review window could not be shown: {0}".format(exc))
        pacing.window_shown = True
        run.shorten(monotonic() + NO_WINDOW_HOLD_S)
        _wait_quietly(pacing, serve, pump, until_window=False)
    finally:
        highlight.restore()


def _wait_quietly(pacing, serve, pump, until_window):
    while True:
        step = pacing.next_step()
        if step == ReviewPacing.DONE or (until_window and step == ReviewPacing.SHOW_WINDOW):
            return step
        if serve():
            pacing.note_activity()
        else:
            pump.wait(QUIET_POLL_S)
