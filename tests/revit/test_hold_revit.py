"""A held change on the fake Revit's main thread: the real executor, hold loop and review window (modal,
with its DispatcherTimer ticking in the fake's nested loop), with this test playing the cloud and the
person (issue 7)."""
from __future__ import annotations

import threading
from typing import Any

import pytest
from nexus_runtime import holds
from nexus_runtime.log import RuntimeLog
from nexus_runtime.run_services import RunServices
from nexus_runtime.settings import Settings

from cloud.contract import validate_host_message
from tests.revit.conftest import runtime_module
from tests.revit.fake_revit import db as DB
from tests.support.waiting import wait_until

ADD_WALL = ("level = DB.FilteredElementCollector(doc).OfClass(DB.Level).FirstElement()\n"
            "wall = DB.Wall.Create(doc, DB.Line.CreateBound(DB.XYZ(5, 5, 0), DB.XYZ(25, 5, 0)), level.Id, False)\n"
            "print(wall.Id.Value)\n")
REPORT = "print('=== CHANGE REPORT ===')\nprint('Walls | Basic Wall | %d added' % len(nexus_changes()['added']))\n"




class HeldRunRig:
    """Runs one held execute on the main thread (in the background) and records what it sends."""

    def __init__(self, revit, **settings: Any) -> None:
        import hashlib
        self.revit = revit
        self.sent: list[dict] = []
        values = {"review_window_after_s": 0.05, "hold_timeout_s": 30.0, **settings}
        self.services = RunServices(RuntimeLog(), lambda: Settings(**values), send=self.sent.append)
        self.reply: dict | None = None
        self.finished = threading.Event()
        epilogue = {"code": REPORT, "sha256": hashlib.sha256(REPORT.encode()).hexdigest(), "capability_version": "t"}
        self.message = {"type": "execute", "request_id": "held", "mode": "automate", "code": ADD_WALL,
                        "timeout_s": 10, "hold": True, "epilogue": epilogue}
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        executor = runtime_module("executor")
        try:
            self.reply = self.revit.run_on_main(executor.execute, self.revit.uiapp, self.message, RuntimeLog(),
                                                self.services)
        finally:
            self.finished.set()

    def start(self) -> dict:
        self.thread.start()
        wait_until(lambda: self.sent)
        held = validate_host_message(self.sent[0])
        assert held["held"] is True and held["committed"] is False
        return held

    def window(self):
        wait_until(lambda: self.revit.windows and not self.revit.windows[-1]._closed)
        return self.revit.windows[-1]

    def cloud_decides(self, decision: str) -> tuple[str, dict | None]:
        return self.services.holds.on_decide("held", decision)

    def join(self) -> dict | None:
        assert self.finished.wait(10), "the held run did not finish"
        return self.reply


def walls(revit) -> set[int]:
    return {e.Id.Value for e in revit.doc._elements.values() if isinstance(e, DB.Wall)}


@pytest.mark.parametrize("button", ["keep", "discard"])
def test_the_review_window_shows_the_held_change_and_the_person_decides_there(revit, button):
    before, walls_before = revit.document_bytes(), walls(revit)
    door = next(e for e in revit.doc._elements.values() if isinstance(e, DB.FamilyInstance))
    revit.uidoc.Selection.SetElementIds([door.Id])
    rig = HeldRunRig(revit)
    held = rig.start()
    new_wall = held["changes"]["added"][0]
    assert "Walls | Basic Wall | 1 added" in held["epilogue_stdout"]

    window = rig.window()
    modified = len(held["changes"]["modified"])
    assert window.shown_modal and window.Title == f"NexusAI: keep this change? (1 added, {modified} modified)"
    assert "Walls | Basic Wall | 1 added" in window.report_text.Text
    assert "isolated" in window.highlight_text.Text and "Discarded in 0:" in window.countdown_text.Text
    view = revit.active_view
    assert view._isolated == frozenset({new_wall})  # the held change, isolated in the active view
    assert [i.Value for i in revit.uidoc.Selection.GetElementIds()] == [new_wall]
    assert new_wall in walls(revit) and rig.services.holds.waiting()

    revit.run_on_main(getattr(window, f"{button}_button").click)
    assert rig.join() is None  # the cloud has not asked yet: the final result answers its decide
    assert view._isolated is None and [i.Value for i in revit.uidoc.Selection.GetElementIds()] == [door.Id.Value]
    assert not rig.services.holds.waiting()

    outcome, final = rig.cloud_decides("discard" if button == "keep" else "keep")  # the Revit decision stands
    assert outcome == holds.NOW
    validate_host_message(final)
    assert "held" not in final
    assert final["details"] == {"decision": button, "decided_by": holds.BY_REVIT}
    if button == "keep":
        assert final["committed"] is True and final["changes"]["added"] == [new_wall]
        assert walls(revit) == walls_before | {new_wall}
    else:
        assert final["committed"] is False and final["ok"] is True
        assert revit.document_bytes() == before and walls(revit) == walls_before
    assert not revit.doc._groups and not revit.doc.IsModifiable


def test_the_cloud_s_decide_closes_the_window_and_is_answered_with_the_outcome(revit):
    rig = HeldRunRig(revit)
    held = rig.start()
    window = rig.window()
    assert rig.cloud_decides("keep") == (holds.LATER, None)
    final = validate_host_message(rig.join())  # the decide came first: the run's own reply answers it
    assert window._closed and final["committed"] is True and final["details"]["decided_by"] == holds.BY_CLOUD
    assert held["changes"]["added"][0] in walls(revit)


def test_a_decision_inside_the_quiet_moment_never_opens_the_window(revit):
    rig = HeldRunRig(revit, review_window_after_s=5.0)  # like `auto`: the cloud decides at once
    rig.start()
    rig.cloud_decides("keep")
    final = validate_host_message(rig.join())
    assert final["committed"] is True and revit.windows == []


def test_no_decision_before_the_hold_timeout_discards(revit):
    before = revit.document_bytes()
    rig = HeldRunRig(revit, hold_timeout_s=0.8)
    rig.start()
    window = rig.window()
    assert rig.join() is None and window._closed  # the window closed by itself
    assert revit.document_bytes() == before and revit.active_view._isolated is None
    outcome, final = rig.cloud_decides("keep")  # a late approval cannot bring it back
    assert final["committed"] is False and final["details"] == {"decision": "discard", "decided_by": holds.BY_TIMEOUT}


def test_escape_or_closing_the_window_discards(revit):
    before = revit.document_bytes()
    rig = HeldRunRig(revit)
    rig.start()
    window = rig.window()
    revit.run_on_main(window.press_escape)
    rig.join()
    assert revit.document_bytes() == before
    assert rig.services.holds.on_decide("held", "keep")[1]["details"]["decision"] == "discard"


def test_a_held_change_and_its_review_are_not_reported_as_edits_between_turns(revit):
    tracking = runtime_module("external_tracking")
    rig = HeldRunRig(revit)
    tracker = tracking.ExternalChangeTracker(revit.app, rig.services, RuntimeLog())
    revit.run_on_main(tracker.start)
    try:
        rig.start()
        revit.run_on_main(rig.window().discard_button.click)
        rig.join()
        assert rig.services.external.take("C:\\Projects\\Tower A.rvt", "Tower A") is None
    finally:
        revit.run_on_main(tracker.stop)


def test_a_run_that_fails_or_changes_nothing_is_not_held(revit):
    rig = HeldRunRig(revit)
    rig.message["code"] = "print('looked only')\n"
    rig.thread.start()
    reply = validate_host_message(rig.join())
    assert "held" not in reply and reply["ok"] is True and rig.sent == [] and revit.windows == []
    rig = HeldRunRig(revit)
    rig.message["code"] = ADD_WALL + "1 / 0\n"
    rig.thread.start()
    reply = validate_host_message(rig.join())
    assert reply["ok"] is False and reply["committed"] is False and rig.sent == [] and not revit.doc._groups
