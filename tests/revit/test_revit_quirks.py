"""Issue 16: the Revit runtime against the fake where it now behaves like real Revit, IronPython 2.7,
pyRevit and .NET 8. Each test failed on the runtime before its fix."""
from __future__ import annotations

import hashlib
import io
import sys
import threading
import time
from pathlib import Path

import pytest
from nexus_runtime import deadline, script_runner
from nexus_runtime.failure_log import FailureLog
from nexus_runtime.log import RuntimeLog

from cloud.contract import validate_host_message
from tests.revit.conftest import runtime_module
from tests.revit.fake_revit import db as DB
from tests.revit.fake_revit.ironpython import compile_like_ironpython, ironpython_json
from tests.revit.harness import REVIT_SCRIPTS, start_revit_host
from tests.revit.test_hold_revit import ADD_WALL, HeldRunRig
from tests.support.waiting import wait_until

EPILOGUE = Path(__file__).resolve().parents[2] / "cloud" / "hosts" / "epilogues" / "revit_epilogue.py"


def execute(revit, code: str, mode: str = "automate", **extra) -> dict:
    executor = runtime_module("executor")
    message = {"type": "execute", "request_id": "r1", "mode": mode, "code": code, "timeout_s": 10, **extra}
    return validate_host_message(revit.run_on_main(executor.execute, revit.uiapp, message, RuntimeLog()))


# item 1: deadline checks inserted as text; positions survive IronPython ------------------------------

FAILS_ON_LINE_5 = ("def f(n):\n"
                   "    for i in range(n):\n"
                   "        if i == 2:\n"
                   "            x = {}\n"
                   "            return x['missing']\n"
                   "f(3)\n")


def test_a_script_with_a_deadline_reports_its_own_line_numbers_under_ironpython(monkeypatch):
    monkeypatch.setattr(deadline, "compile", compile_like_ironpython, raising=False)
    outcome = script_runner.run_script(FAILS_ON_LINE_5, {}, timeout_s=5)
    assert outcome.error["type"] == "KeyError" and outcome.error["line"] == 5
    assert 'line 6, in <module>' in outcome.error["traceback"] and "line 5, in f" in outcome.error["traceback"]


def test_trace_line_events_name_the_script_lines_under_ironpython(monkeypatch):
    monkeypatch.setattr(deadline, "compile", compile_like_ironpython, raising=False)
    code = "a = 1\nfor i in range(2):\n    a += i\nb = a\n"
    seen: list[int] = []

    def trace(frame, event, arg):
        if frame.f_code.co_filename == "<t>":
            if event == "line":
                seen.append(frame.f_lineno)
            return trace
        return None

    compiled = deadline.compile_with_checks(code, "<t>")
    sys.settrace(trace)
    try:
        exec(compiled, {deadline.CHECK_NAME: lambda: None})
    finally:
        sys.settrace(None)
    assert seen == [1, 2, 3, 2, 3, 2, 4]


def test_checks_keep_lines_and_reach_loops_whose_body_starts_with_a_compound_statement():
    code = ("n = 0\n"
            "while True:\n"
            "    try:\n"
            "        n += 1\n"
            "    except:\n"
            "        pass\n")
    checked = deadline.insert_checks(code, compile(code, "<t>", "exec", 0x400, True))
    assert checked.count("\n") == code.count("\n")
    assert checked.count(deadline.CHECK_NAME) == 2  # the try body (every iteration) and the bare except
    clock = iter(range(1000)).__next__
    outcome = script_runner.run_script(code, {}, timeout_s=3, clock=lambda: float(clock()))
    assert outcome.timed_out is True and outcome.error["type"] == "ScriptTimeout"


# item 2: the epilogue's directive survives non-ASCII names under IronPython's json ------------------

def test_the_change_report_directive_survives_a_view_named_with_latin1_characters(revit, monkeypatch):
    revit.active_view._name = "Ansicht Süd"
    code = EPILOGUE.read_text(encoding="utf-8")
    epilogue = {"code": code, "sha256": hashlib.sha256(code.encode("utf-8")).hexdigest(), "capability_version": "t"}
    monkeypatch.setitem(sys.modules, "json", ironpython_json())
    reply = execute(revit, ADD_WALL, epilogue=epilogue)
    monkeypatch.undo()
    assert reply["committed"] is True
    assert "[change report failed]" not in reply["epilogue_stdout"]
    assert '"view": "Ansicht Süd"' in reply["epilogue_stdout"]


# item 6: failures settled inside Commit, cleared on rollback -----------------------------------------

def test_a_failure_posted_after_our_preprocessor_rolls_back_at_once_without_a_blocking_dialog(revit):
    before = revit.document_bytes()
    revit.failures_after_preprocessing.append("Another add-in rejected this change.")
    reply = execute(revit, ADD_WALL)
    assert reply["ok"] is False and reply["committed"] is False
    assert reply["error"]["type"] == "TransactionRolledBack"
    assert revit.document_bytes() == before
    assert revit.blocking_dialogs == []
    assert reply["dialogs"] == [{"message": "Revit dialog Dialog_Revit_DocWarnDialog", "dismissed": True}]
    assert execute(revit, "print(1)", mode="collect")["ok"] is True  # nothing left pending


def test_a_held_run_whose_commit_fails_late_ends_its_group_cleanly(revit):
    revit.failures_after_preprocessing.append("Another add-in rejected this change.")
    before = revit.document_bytes()
    rig = HeldRunRig(revit)
    rig.thread.start()
    reply = validate_host_message(rig.join())
    assert reply["ok"] is False and reply["error"]["type"] == "TransactionRolledBack" and rig.sent == []
    assert revit.document_bytes() == before and revit.doc._groups == []


def test_the_preprocessor_clears_failures_before_it_asks_for_a_rollback(revit):
    failure_handling = runtime_module("failure_handling")
    message = DB.FailureMessage(DB.BuiltInFailures.JoinElementsFailures.CannotJoinElementsError)
    accessor = DB.FailuresAccessor(revit.doc, [message], "t", DB.FailureHandlingOptions())
    result = failure_handling.RecordingFailuresPreprocessor(FailureLog()).PreprocessFailures(accessor)
    assert result == DB.FailureProcessingResult.ProceedWithRollBack
    assert accessor.GetFailureHandlingOptions().GetClearAfterRollback() is True


@pytest.fixture
def modeless_failures(monkeypatch):
    """The runtime as it was configured before: modeless failure handling, where Commit() can be Pending."""
    executor = runtime_module("executor")
    original = executor.configure_failure_handling

    def modeless(transaction, preprocessor):
        original(transaction, preprocessor)
        options = transaction.GetFailureHandlingOptions()
        options.SetForcedModalHandling(False)
        transaction.SetFailureHandlingOptions(options)

    monkeypatch.setattr(executor, "configure_failure_handling", modeless)


@pytest.mark.usefixtures("modeless_failures")
def test_a_pending_commit_is_reported_as_unsettled_not_as_nothing_changed(revit):
    revit.failures_after_preprocessing.append("Another add-in rejected this change.")
    before = revit.document_bytes()
    reply = execute(revit, ADD_WALL)
    assert reply["ok"] is False and reply["committed"] is False
    assert reply["error"]["type"] == "TransactionPending" and "nothing was changed" not in reply["error"]["message"]
    wait_until(lambda: revit.document_bytes() == before)  # Revit settled it with the person afterwards

    rig = HeldRunRig(revit)
    rig.thread.start()
    held = validate_host_message(rig.join())  # a held run answers too: no exception out of the group
    assert held["error"]["type"] == "TransactionPending" and rig.sent == []


# item 8: a held run pumps messages; without its window it is not held long ------------------------

def test_while_a_change_is_held_revit_keeps_pumping_messages(revit):
    rig = HeldRunRig(revit, review_window_after_s=60.0)
    rig.start()
    assert revit.run_on_main(lambda: "handled", timeout=5) == "handled"  # "Not Responding" otherwise
    assert rig.cloud_decides("discard")[0] in ("later", "now")
    assert validate_host_message(rig.join())["committed"] is False


def test_a_held_run_whose_window_cannot_open_is_discarded_after_a_short_wait(revit, monkeypatch):
    hold_review = runtime_module("hold_review")
    monkeypatch.setattr(hold_review, "NO_WINDOW_HOLD_S", 0.3)
    revit.windows_fail = True
    before = revit.document_bytes()
    rig = HeldRunRig(revit, hold_timeout_s=600.0)
    rig.start()
    assert rig.finished.wait(10)
    assert any(m.get("type") == "decided" and m["decision"] == "discard" for m in rig.sent)
    assert revit.document_bytes() == before


# item 11: stderr is the script's too ---------------------------------------------------------------

def test_what_a_script_writes_to_stderr_is_captured_even_when_the_engine_stream_is_gone(monkeypatch):
    gone = io.StringIO()
    gone.close()  # pyRevit shut this engine's streams down when another engine started
    monkeypatch.setattr(sys, "stderr", gone)
    code = ("import traceback, warnings\n"
            "try:\n"
            "    1 / 0\n"
            "except ZeroDivisionError:\n"
            "    traceback.print_exc()\n"
            "warnings.warn('mind the gap')\n"
            "print('done')\n")
    outcome = script_runner.run_script(code, {"__name__": "__main__"})
    assert outcome.ok is True
    assert "ZeroDivisionError" in outcome.stdout and "mind the gap" in outcome.stdout
    assert outcome.stdout.rstrip().endswith("done")


# item 12: task dialogs with custom buttons only ---------------------------------------------------

def test_a_task_dialog_with_only_custom_buttons_is_answered_and_reported(revit):
    revit.updaters.append(lambda doc: revit.show_task_dialog("Choose how to join.", (1001, 1002)))
    reply = execute(revit, ADD_WALL)
    assert revit.task_dialogs == [] and revit.dismissed_dialogs == [("Choose how to join.", 1002)]
    assert reply["dialogs"] == [{"message": "Choose how to join. [answered with its button 2: it had only "
                                            "custom buttons]", "dismissed": True}]


# ElementId as Revit takes it -----------------------------------------------------------------------

def test_export_view_names_an_element_id_revit_cannot_take(revit):
    from nexus_runtime import protocol
    with pytest.raises(protocol.ProtocolError, match="element_ids: Revit element ids are 64-bit"):
        protocol.check_export_view({"type": "export_view", "request_id": "e", "max_px": 100,
                                    "element_ids": [2 ** 70]})
    with pytest.raises(TypeError):
        DB.ElementId("12")
    with pytest.raises(TypeError):
        DB.ElementId(12.0)


# through the real server: wake, stalled and half-open links, the proxy -----------------------------

@pytest.fixture
def launch(server):
    hosts = []

    def start(**options):
        token = server.token("alice")
        host = start_revit_host(server.url, token, **options)
        hosts.append(host)
        return host

    yield start
    for host in hosts:
        host.stop()


def run(server, host, code: str, mode: str = "collect", timeout_s: float = 10) -> dict:
    message = {"type": "execute", "mode": mode, "code": code, "timeout_s": timeout_s}
    return validate_host_message(server.send_to_host(host.host_id, message, timeout=timeout_s + 30))


def test_a_job_reaches_revit_while_the_person_is_away(server, launch):
    """Item 4: no Idling while the user is inactive; the runtime wakes Revit's main window."""
    host = launch(busy_after_s=3.0)
    host.session.user_idle = True
    reply = run(server, host, REVIT_SCRIPTS["count_elements"])
    assert reply["ok"] is True and reply["stdout"] == "12\n"
    assert host.session.main_window_messages and set(host.session.main_window_messages) == {0}  # WM_NULL


def test_a_stalled_network_never_freezes_revit_on_disconnect(server, launch):
    """Item 7: a send stuck in the network must not hold the lock Disconnect takes on the UI thread."""
    host = launch()
    host.session.network = "stalled"
    sender = threading.Thread(target=host.runtime.connection.send,
                              args=({"type": "execute_result", "request_id": "x"},), daemon=True)
    sender.start()
    wait_until(lambda: any(s for s in [host.runtime.connection._transport]))
    time.sleep(0.2)  # the send is now stuck inside SendAsync
    host.session.run_on_main(host.runtime.disconnect, timeout=10)
    sender.join(10)
    assert not sender.is_alive()
    assert host.runtime.status()["state"] == "stopped"


def test_a_half_open_link_is_noticed_and_replaced(server, launch):
    """Item 9: the server goes silent without closing; the heartbeat finds out and reconnects."""
    host = launch(heartbeat_s=0.2)
    host.session.network = "black hole"
    wait_until(lambda: "half-open" in (host.runtime.connection.last_error or ""), timeout=15)
    host.session.network = "ok"
    wait_until(lambda: host.runtime.connection.connected_count == 2 and host.runtime.status()["state"] == "connected",
               timeout=15)
    assert run(server, host, REVIT_SCRIPTS["count_elements"])["stdout"] == "12\n"


def test_the_connection_goes_through_the_system_proxy(server):
    """Item 9: a network where only the system proxy with the user's credentials gets out."""
    host = start_revit_host(server.url, server.token("alice"), proxy_required=True)
    try:
        assert host.session.proxy_required is True
        assert run(server, host, REVIT_SCRIPTS["count_elements"])["stdout"] == "12\n"
    finally:
        host.stop()
