"""The Revit-free parts of issue 7 in the runtime, run for real under CPython: the held-run state machine and
who may decide it, the router's handling of decide and of jobs during a hold, the pacing of the review
window, edits between turns, dialog dismissal rules, and deadlines that a bare `except:` cannot escape."""
from __future__ import annotations

import gc
import json
import threading
import time

import pytest
from nexus_runtime import holds, protocol
from nexus_runtime.dispatch import Dispatcher
from nexus_runtime.external_changes import ExternalChanges, summary
from nexus_runtime.guard_log import IDCANCEL, IDCLOSE, IDNO, IDOK, GuardLog, dismissal_codes
from nexus_runtime.holds import (
    ANSWERED,
    BY_CLOUD,
    BY_REVIT,
    BY_TIMEOUT,
    DECIDED,
    DISCARD,
    KEEP,
    PENDING,
    HoldRegistry,
    ReviewPacing,
    countdown_text,
)
from nexus_runtime.log import RuntimeLog
from nexus_runtime.review_text import report_text, review_body, review_title
from nexus_runtime.router import CommandRouter
from nexus_runtime.script_runner import run_script
from nexus_runtime.sender import BackgroundSender

from cloud.contract import validate_host_message
from tests.support.waiting import wait_until


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def final(request_id: str, committed: bool) -> dict:
    return protocol.execute_result(request_id, True, committed, "", [], None, 5)


# --- the held-run state machine ------------------------------------------------------------------


def test_the_cloud_decides_first_and_is_answered_once_the_decision_is_applied():
    registry = HoldRegistry(clock=Clock())
    run = registry.begin("r1", 900)
    assert run.state == PENDING and registry.waiting()

    assert registry.on_decide("r1", "keep") == (holds.LATER, None)  # the main thread still has to apply it
    assert run.decision == KEEP and run.decided_by == BY_CLOUD and run.state == DECIDED
    assert run.decide(DISCARD, BY_REVIT) is False  # first decision wins

    reply = registry.settle(run, final("r1", True))
    assert reply is not None and reply["committed"] is True and run.state == ANSWERED
    assert not registry.waiting()
    assert registry.on_decide("r1", "keep") == (holds.UNKNOWN, None)  # answered: forgotten


def test_a_decision_taken_in_revit_wins_and_answers_the_cloud_s_later_decide():
    registry = HoldRegistry(clock=Clock())
    run = registry.begin("r2", 900)
    assert run.decide(KEEP, BY_REVIT) is True
    assert registry.settle(run, final("r2", True)) is None  # the cloud has not asked yet: nothing to send
    assert not registry.waiting()

    outcome, reply = registry.on_decide("r2", "discard")  # the chat page said discard, too late
    assert outcome == holds.NOW and reply["committed"] is True and run.decided_by == BY_REVIT
    assert run.state == ANSWERED
    assert registry.on_decide("r2", "discard")[0] == holds.UNKNOWN


def test_no_decision_before_the_hold_timeout_counts_as_discard():
    clock = Clock()
    run = HoldRegistry(clock=clock).begin("r3", 60)
    assert run.expire(clock.now + 59) is False and run.decision is None
    assert run.expire(clock.now + 60) is True
    assert (run.decision, run.decided_by) == (DISCARD, BY_TIMEOUT)


def test_only_keep_or_discard_decide_and_only_for_a_held_request():
    registry = HoldRegistry(clock=Clock())
    run = registry.begin("r4", 900)
    assert registry.on_decide("r4", "approve") == (holds.UNKNOWN, None)
    assert registry.on_decide("r4", None) == (holds.UNKNOWN, None)
    assert registry.on_decide("other", "keep") == (holds.UNKNOWN, None)
    assert run.decision is None and run.state == PENDING
    with pytest.raises(ValueError):
        run.decide("yes", BY_REVIT)


def race_settle_against_decide() -> list[dict]:
    registry = HoldRegistry()
    run = registry.begin("race", 900)
    sent: list[dict] = []
    start = threading.Barrier(2)

    def decide() -> None:
        start.wait()
        reply = registry.on_decide("race", "keep")[1]
        if reply:
            sent.append(reply)

    def settle() -> None:
        start.wait()
        run.decide(KEEP, BY_REVIT)
        reply = registry.settle(run, final("race", True))
        if reply:
            sent.append(reply)

    threads = [threading.Thread(target=decide), threading.Thread(target=settle)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sent


def test_answering_races_between_settle_and_decide_send_exactly_once():
    for _ in range(200):
        assert len(race_settle_against_decide()) == 1


def test_settled_results_nobody_asked_for_are_forgotten_after_a_while():
    clock = Clock()
    registry = HoldRegistry(clock=clock, settled_kept_s=60)
    run = registry.begin("old", 900)
    run.decide(DISCARD, BY_REVIT)
    registry.settle(run, final("old", False))
    clock.now += 61
    registry.begin("new", 900)
    assert registry.on_decide("old", "keep") == (holds.UNKNOWN, None)


def test_the_review_window_opens_only_after_a_quiet_moment():
    clock = Clock()
    run = HoldRegistry(clock=clock).begin("r5", 900)
    pacing = ReviewPacing(run, 1.5, clock)
    assert pacing.next_step() == ReviewPacing.WAIT
    clock.now += 1.0
    pacing.note_activity()  # the cloud asked for the preview image
    clock.now += 1.0
    assert pacing.next_step() == ReviewPacing.WAIT
    clock.now += 0.6
    assert pacing.next_step() == ReviewPacing.SHOW_WINDOW
    run.decide(KEEP, BY_CLOUD)
    assert pacing.next_step() == ReviewPacing.DONE
    assert countdown_text(899.6) == "15:00" and countdown_text(61) == "1:01"


# --- the router: decide, and jobs during a hold --------------------------------------------------


class RouterRig:
    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.ran: list[str] = []
        self.release = threading.Event()
        self.registry = HoldRegistry()
        self.dispatcher = Dispatcher(self._run_job)
        self.dispatcher.attach_event(lambda: "Accepted")
        self.router = CommandRouter(self.dispatcher, self.sent.append, RuntimeLog(), lambda: 5.0, self.registry)

    def _run_job(self, job, context):
        self.ran.append(job.kind)
        if job.kind == "execute":
            self.release.wait(10)
            return None  # a held run: its final result answers the decide
        return protocol.export_view_error(job.request_id, "served")

    def handle(self, message: dict) -> None:
        self.router.handle(json.dumps(message))




def test_while_a_run_is_held_export_view_is_served_and_another_execute_is_refused():
    rig = RouterRig()
    run = rig.registry.begin("held-1", 900)
    rig.handle({"type": "execute", "request_id": "held-1", "mode": "automate", "code": "x", "timeout_s": 5,
                "hold": True})
    main = threading.Thread(target=rig.dispatcher.drain, args=("uiapp",))
    main.start()
    wait_until(lambda: rig.ran == ["execute"])

    rig.handle({"type": "export_view", "request_id": "held-1.view", "max_px": 100})
    rig.handle({"type": "execute", "request_id": "other", "mode": "collect", "code": "x", "timeout_s": 5})
    wait_until(lambda: len(rig.dispatcher.queue) == 1)
    assert rig.dispatcher.drain("uiapp", holds.SERVED_WHILE_HELD) == 1  # what the review loop does
    wait_until(lambda: len(rig.sent) == 2)
    assert {m["request_id"]: m["type"] for m in rig.sent} == {"other": "error", "held-1.view": "export_view_result"}
    assert "busy" in next(m for m in rig.sent if m["request_id"] == "other")["message"]
    assert run.decision is None

    rig.release.set()
    main.join(5)
    assert len(rig.sent) == 2  # the held run's worker sends nothing: its answer waits for the decide


def test_nothing_but_a_decide_for_the_held_request_can_decide_it():
    rig = RouterRig()
    run = rig.registry.begin("held-2", 900)
    for sneaky in ({"type": "execute", "request_id": "held-2", "mode": "automate", "code": "x", "timeout_s": 5,
                    "decision": "keep"},
                   {"type": "export_view", "request_id": "held-2", "max_px": 100, "decision": "keep"},
                   {"type": "approval", "request_id": "held-2", "decision": "keep"},
                   {"type": "execute_result", "request_id": "held-2", "committed": True, "held": False},
                   {"type": "decide", "request_id": "another", "decision": "keep"},
                   {"type": "decide", "request_id": "held-2", "decision": "yes please"}):
        rig.handle(sneaky)
    assert run.decision is None and rig.registry.waiting()
    errors = [m for m in rig.sent if m["type"] == "error"]
    assert any("no automation is held" in m["message"] for m in errors)

    rig.handle({"type": "decide", "request_id": "held-2", "decision": "discard"})
    assert run.decision == DISCARD and run.decided_by == BY_CLOUD


def test_a_decide_arriving_after_the_decision_was_applied_gets_the_final_result():
    rig = RouterRig()
    run = rig.registry.begin("held-3", 900)
    run.decide(DISCARD, BY_REVIT)
    rig.registry.settle(run, final("held-3", False))
    rig.handle({"type": "decide", "request_id": "held-3", "decision": "keep"})
    assert rig.sent[-1]["type"] == "execute_result" and rig.sent[-1]["committed"] is False
    validate_host_message(rig.sent[-1])


# --- what the review window says -------------------------------------------------------------------


def test_the_review_text_is_the_report_without_its_directive_line():
    changes = {"added": [5, 6], "modified": [7], "deleted": []}
    stdout = "=== CHANGE REPORT ===\nWalls | Basic Wall\n@@nexus {\"view\": \"Level 1\"}\n"
    assert review_title(changes) == "NexusAI: keep this change? (2 added, 1 modified)"
    assert report_text(stdout) == "=== CHANGE REPORT ===\nWalls | Basic Wall"
    assert review_body(changes, None, "made two walls\n").startswith("The script printed:")
    assert "2 added" in review_body(changes, "", "")


# --- edits between turns -----------------------------------------------------------------------------


def test_edits_between_turns_are_summarised_per_document_and_reported_once():
    external = ExternalChanges(max_listed_ids=2)
    external.record("A.rvt", added=[9], modified=[1, 2, 3], deleted=[])
    external.record("A.rvt", added=[], modified=[9], deleted=[])  # modified after being added: still added
    external.record("B.rvt", added=[], modified=[], deleted=[4], undo_or_redo=True)
    report = external.take("A.rvt", "Tower A")
    assert report == {"summary": "3 elements modified, 1 added in 'Tower A' by the person since the last run",
                      "added": [9], "modified": [1, 2]}
    assert external.take("A.rvt", "Tower A") is None
    assert external.take("B.rvt", "Annex")["summary"] == (
        "1 element deleted in 'Annex' by the person since the last run (including undo or redo)")
    assert summary({"added": [1]}, "X") == "1 element added in 'X' by the person since the last run"
    validate_host_message(protocol.execute_result("r", True, False, "", [], None, 1, extra={"external_changes": report}))


# --- dialogs and blocked operations ------------------------------------------------------------------


def test_dialogs_are_dismissed_without_accepting_what_they_propose():
    assert dismissal_codes(dialog_type=0) == (IDOK,)  # an OK-only message box can only be acknowledged
    assert dismissal_codes(dialog_type=1)[0] == IDCANCEL
    assert dismissal_codes(dialog_type=4)[0] == IDNO
    assert dismissal_codes(dialog_type=0x31)[0] == IDCANCEL  # icon bits ignored
    assert dismissal_codes(is_task_dialog=True)[:2] == (IDCANCEL, IDCLOSE)
    record = GuardLog()
    record.blocked("DocumentSaving", "Tower A")
    record.blocked("DocumentSaving", "Tower A")
    record.blocked("FileExporting", "Annex", "DWG")
    record.blocked("DocumentClosing", "Annex", cancelled=False)
    record.dialog("Elements were deleted", True)
    fields = record.result_fields()
    assert fields["blocked"] == ["save of 'Tower A'", "export of 'Annex' (DWG)",
                                 "close of 'Annex' (Revit did not let it be blocked)"]
    assert fields["dialogs"] == [{"message": "Elements were deleted", "dismissed": True}]
    assert GuardLog().result_fields() == {}
    validate_host_message(protocol.execute_result("r", True, False, "", [], None, 1, extra=fields))


# --- deadlines that bite ---------------------------------------------------------------------------


@pytest.fixture
def no_cyclic_collector():
    """The recursive script spends its time at the recursion limit. A collection there runs the finalizers
    of whatever earlier tests in this worker left behind, at the limit, and each fails into pytest's
    unraisable hook with the script's 2,000-deep chain attached: pytest then cannot render the failure
    and the worker dies (CI, stop 35). Collect first, and not during the script."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


@pytest.mark.parametrize("code", [
    "while True:\n    try:\n        pass\n    except:\n        pass\n",
    "while 1:\n    try:\n        while 1:\n            pass\n    except BaseException:\n        continue\n",
    "while True:\n    try:\n        pass\n    finally:\n        continue\n",
    "def f():\n    try:\n        f()\n    except:\n        f()\nf()\n",
    "try:\n    while True:\n        pass\nexcept:\n    pass\nprint('went on')\n",
])
def test_a_script_that_swallows_the_timeout_is_still_stopped_at_its_deadline(code, no_cyclic_collector):
    started = time.monotonic()
    outcome = run_script(code, {}, timeout_s=0.3)
    assert time.monotonic() - started < 2
    assert outcome.timed_out and not outcome.ok and outcome.error["type"] == "ScriptTimeout"
    assert "went on" not in outcome.stdout


def test_inserted_checks_leave_docstrings_futures_and_line_numbers_alone():
    code = ("from __future__ import division\n"
            "def f():\n    '''doc'''\n    return f.__doc__\n"
            "print(f(), 1 / 2)\n"
            "for i in range(3):\n    pass\n"
            "raise ValueError('line 8')\n")
    outcome = run_script(code, {}, timeout_s=5)
    assert outcome.stdout == "doc 0.5\n" and outcome.error["line"] == 8 and not outcome.timed_out


# --- sending from the main thread ----------------------------------------------------------------------


def test_the_background_sender_delivers_in_order_and_survives_a_failing_send():
    delivered: list[int] = []

    def send(message: int) -> None:
        if message == 2:
            raise OSError("link down")
        delivered.append(message)

    log = RuntimeLog()
    sender = BackgroundSender(send, log)
    for n in range(1, 5):
        sender.send(n)
    wait_until(lambda: delivered == [1, 3, 4])
    sender.stop()
    assert any("link down" in line for line in log.recent())
