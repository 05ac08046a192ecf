"""Show in Revit (issue 28, item 3): show_elements selects and zooms to elements on Revit's main thread, and a
held change is isolated in the active view until Keep or Discard, with the real API's failure modes modelled
by the fake: an element deleted meanwhile, a view that cannot isolate (a schedule, a sheet), no document."""
from __future__ import annotations

import json
import threading

import pytest
from nexus_runtime import holds, protocol
from nexus_runtime.dispatch import Dispatcher
from nexus_runtime.element_display import NO_DOCUMENT, nothing_left, split_existing
from nexus_runtime.log import RuntimeLog
from nexus_runtime.review_text import highlight_note
from nexus_runtime.router import CommandRouter

from cloud.contract import validate_host_message
from tests.revit.conftest import runtime_module
from tests.revit.fake_revit import db as DB
from tests.revit.test_hold_revit import ADD_WALL, HeldRunRig, wait_until

# --- plain logic (CPython, as under IronPython) ----------------------------------------------------


def test_the_asked_ids_split_into_present_and_missing_once_each_in_order():
    assert split_existing([5, 3, 5, 9, 3], lambda i: i != 9) == ([5, 3], [9])
    assert "deleted since" in nothing_left([9], "Tower") and "#9" in nothing_left([9], "Tower")
    text = nothing_left(list(range(1, 14)), "Tower")
    assert "13 elements" in text and "#10 and 3 more" in text


@pytest.mark.parametrize("message, named", [
    ({"element_ids": []}, "element_ids"),
    ({"element_ids": [True]}, "element_ids"),
    ({"element_ids": ["12"]}, "element_ids"),
    ({"element_ids": [2 ** 63]}, "out of range"),
    ({"element_ids": list(range(1001))}, "1 to 1000"),
    ({"request_id": ""}, "request_id"),
])
def test_a_malformed_show_elements_is_refused_naming_the_field(message, named):
    with pytest.raises(protocol.ProtocolError, match=named):
        protocol.check_show_elements({"type": "show_elements", "request_id": "s", "element_ids": [1], **message})


def test_the_review_note_says_when_the_active_view_cannot_isolate():
    assert "'Door Schedule' cannot isolate" in highlight_note(2, False, "Door Schedule")
    assert "2 changed elements shown in the active view are selected and isolated" in highlight_note(2, True)


def test_show_elements_is_served_while_a_change_is_held_and_a_bad_one_gets_an_error():
    sent: list[dict] = []
    ran: list[str] = []
    release = threading.Event()
    registry = holds.HoldRegistry()

    def run_job(job, context):
        ran.append(job.kind)
        if job.kind == "execute":
            release.wait(10)
            return None
        return protocol.show_elements_result(job.request_id, job.message["element_ids"], [], True, "Level 1", "T")

    dispatcher = Dispatcher(run_job)
    dispatcher.attach_event(lambda: "Accepted")
    router = CommandRouter(dispatcher, sent.append, RuntimeLog(), lambda: 5.0, registry)
    registry.begin("held", 900)
    router.handle(json.dumps({"type": "execute", "request_id": "held", "mode": "automate", "code": "x",
                              "timeout_s": 5, "hold": True}))
    main = threading.Thread(target=dispatcher.drain, args=("uiapp",))
    main.start()
    wait_until(lambda: ran == ["execute"])
    router.handle(json.dumps({"type": "show_elements", "request_id": "show-1", "element_ids": [7]}))
    router.handle(json.dumps({"type": "show_elements", "request_id": "show-2", "element_ids": "7"}))
    wait_until(lambda: len(dispatcher.queue) == 1 and len(sent) == 1)
    assert dispatcher.drain("uiapp", holds.SERVED_WHILE_HELD) == 1  # what the review loop does while it waits
    wait_until(lambda: len(sent) == 2)
    replies = {m["request_id"]: validate_host_message(m) for m in sent}
    assert replies["show-1"]["shown"] == [7]
    assert replies["show-2"]["type"] == "error" and "element_ids" in replies["show-2"]["message"]
    release.set()
    main.join(5)


# --- on the fake Revit's main thread ----------------------------------------------------------------


def show(revit, ids: list[int]) -> dict:
    message = {"type": "show_elements", "request_id": "show-1", "element_ids": ids}
    reply = revit.run_on_main(runtime_module("show_elements").show_elements, revit.uiapp, message, RuntimeLog())
    return validate_host_message(reply)


def doors(revit) -> list:
    return sorted((e for e in revit.doc._elements.values() if isinstance(e, DB.FamilyInstance)), key=lambda e: e.Id.Value)


def level_of(revit, element) -> str:
    return revit.doc._elements[element.LevelId._value].Name


def selected(revit) -> list[int]:
    return [i.Value for i in revit.uidoc.Selection.GetElementIds()]


def delete(revit, element) -> None:
    def remove() -> None:
        transaction = DB.Transaction(revit.doc, "delete")
        transaction.Start()
        revit.doc.Delete(element.Id)
        transaction.Commit()
    revit.run_on_main(remove)


def test_show_selects_the_elements_and_zooms_to_them_in_the_active_view(revit):
    door = next(d for d in doors(revit) if level_of(revit, d) == revit.active_view.Name)
    reply = show(revit, [door.Id.Value])
    assert reply["ok"] and reply["shown"] == [door.Id.Value] and reply["missing"] == [] and reply["zoomed"]
    assert reply["view"] == revit.active_view.Name and reply["document"] == revit.doc.Title
    assert selected(revit) == [door.Id.Value] and revit.uidoc._shown == [(reply["view"], [door.Id.Value])]


def test_an_element_the_active_view_does_not_show_is_shown_in_a_view_that_does(revit):
    first = revit.active_view.Name
    door = next(d for d in doors(revit) if level_of(revit, d) != first)
    reply = show(revit, [door.Id.Value])
    assert reply["zoomed"] and reply["view"] == level_of(revit, door) != first
    assert revit.active_view.Name == level_of(revit, door) and selected(revit) == [door.Id.Value]


def test_elements_deleted_meanwhile_are_left_out_and_named(revit):
    first, second = doors(revit)[:2]
    delete(revit, first)
    reply = show(revit, [first.Id.Value, second.Id.Value])
    assert reply["ok"] and reply["shown"] == [second.Id.Value] and reply["missing"] == [first.Id.Value]
    assert selected(revit) == [second.Id.Value]
    delete(revit, second)
    reply = show(revit, [first.Id.Value, second.Id.Value])
    assert reply["ok"] is False and reply["missing"] == [first.Id.Value, second.Id.Value]
    assert "None of these 2 elements is in 'Tower A' any more" in reply["error"] and "deleted since" in reply["error"]
    assert selected(revit) == [second.Id.Value]  # nothing changed in Revit


def test_an_element_no_view_can_show_stays_selected_and_the_reply_says_it_was_not_zoomed_to(revit):
    bookkeeping = next(e for e in revit.doc._elements.values() if isinstance(e, DB.InternalElement))
    view = revit.active_view
    reply = show(revit, [bookkeeping.Id.Value])
    assert reply["ok"] and reply["zoomed"] is False and "No good view" in reply["note"]
    assert selected(revit) == [bookkeeping.Id.Value] and revit.active_view is view


def test_without_an_active_document_nothing_is_shown_and_the_reply_says_why(revit):
    door = doors(revit)[0]
    revit.close_document()
    reply = show(revit, [door.Id.Value])
    assert reply["ok"] is False and reply["error"] == NO_DOCUMENT


# --- the held change, isolated in the active view ------------------------------------------------


DELETE_THE_SELECTED_DOOR = ("door = doc.GetElement(uidoc.Selection.GetElementIds()[0])\n"
                            "doc.Delete(door.Id)\n" + ADD_WALL)


@pytest.mark.parametrize("button", ["keep", "discard"])
def test_a_held_change_that_deleted_the_selection_still_gets_its_isolation_reset(revit, button):
    door = next(d for d in doors(revit) if level_of(revit, d) == revit.active_view.Name)
    revit.uidoc.Selection.SetElementIds([door.Id])
    rig = HeldRunRig(revit)
    rig.message["code"] = DELETE_THE_SELECTED_DOOR
    held = rig.start()
    assert held["changes"]["deleted"] == [door.Id.Value]
    window = rig.window()
    view = revit.active_view
    assert view._isolated == frozenset(held["changes"]["added"])
    revit.run_on_main(getattr(window, f"{button}_button").click)
    rig.join()
    assert view._isolated is None  # reset although the selection it restores lost an element
    assert selected(revit) == []  # restored before the decision is applied: the door was gone then
    rig.cloud_decides(button)


@pytest.mark.parametrize("kind", ["schedule", "sheet"])
def test_a_view_that_cannot_isolate_keeps_the_review_going_and_says_so(revit, kind):
    if kind == "schedule":
        view = next(v for v in revit.doc._elements.values() if isinstance(v, DB.ViewSchedule))
        code = f"doc.GetElement(DB.ElementId({doors(revit)[0].Id.Value})).LookupParameter('Mark').Set('D-1')\n"
    else:
        view = revit.doc._seed(DB.ViewSheet(revit.doc, "A101 - Plans"))
        code = ADD_WALL
    revit.run_on_main(revit.activate_view, view)
    before = revit.document_bytes()
    rig = HeldRunRig(revit)
    rig.message["code"] = code
    rig.start()
    window = rig.window()
    assert view._isolated is None
    if kind == "schedule":  # the schedule lists the door: selected, not isolated, and the window says why
        assert selected(revit) == [doors(revit)[0].Id.Value]
        assert "'Door Schedule' cannot isolate" in window.highlight_text.Text
    else:  # a sheet shows no model element: nothing to select or isolate
        assert selected(revit) == [] and "not visible in the active view" in window.highlight_text.Text
    revit.run_on_main(window.discard_button.click)
    rig.join()
    assert revit.document_bytes() == before and view._isolated is None and revit.active_view is view
    rig.cloud_decides("discard")


def test_show_in_revit_while_a_change_is_held_selects_without_ending_the_hold(revit):
    rig = HeldRunRig(revit)
    held = rig.start()
    window = rig.window()
    new_wall = held["changes"]["added"][0]
    door = doors(revit)[0]
    replies: list = []
    dispatcher = Dispatcher(runtime_module("revit_jobs").make_job_runner(RuntimeLog(), rig.services))
    dispatcher.attach_event(lambda: "Accepted")
    rig.services.attach_pump(lambda context: dispatcher.drain(context, holds.SERVED_WHILE_HELD))
    waiting = threading.Thread(target=lambda: replies.append(dispatcher.serve(
        {"type": "show_elements", "request_id": "show-held", "element_ids": [door.Id.Value, new_wall]}, 10)))
    waiting.start()
    waiting.join(15)
    reply = validate_host_message(replies[-1])
    assert reply["ok"] and reply["shown"] == [door.Id.Value, new_wall]
    assert rig.services.holds.waiting() and not window._closed
    revit.run_on_main(window.keep_button.click)
    rig.join()
    assert rig.cloud_decides("keep")[1]["committed"] is True
