"""`abort` in the Revit runtime (issue 22, item 1): a job Revit has not picked up is abandoned, a running
script stops at its next checkpoint and its transaction is rolled back, a held change is discarded, and an
abort for nothing is a harmless answer. The router and the script runner run for real under CPython; the
executor on the fake Revit's main thread."""
from __future__ import annotations

import json
import threading
import time

from nexus_runtime import holds, protocol
from nexus_runtime.aborts import AbortBoard
from nexus_runtime.dispatch import Dispatcher
from nexus_runtime.holds import DISCARD, HoldRegistry
from nexus_runtime.log import RuntimeLog
from nexus_runtime.router import CommandRouter
from nexus_runtime.script_runner import run_script

from cloud.contract import validate_host_message
from tests.revit.conftest import runtime_module
from tests.support.waiting import wait_until

SLOW_LOOP = "import time\nn = 0\nwhile True:\n    try:\n        time.sleep(0.02)\n        n += 1\n    except:\n        pass\n"
CANCELLED = "cancelled while running: rolled back, the model is unchanged"




class Rig:
    """A router over a real dispatcher whose main thread runs scripts with run_script and the abort board."""

    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.ran: list[str] = []
        self.aborts = AbortBoard()
        self.registry = HoldRegistry()
        self.dispatcher = Dispatcher(self._run_job)
        self.dispatcher.attach_event(lambda: "Accepted")
        self.router = CommandRouter(self.dispatcher, self.sent.append, RuntimeLog(), lambda: 5.0, self.registry,
                                    aborts=self.aborts)

    def _run_job(self, job, context):
        self.ran.append(job.request_id)
        flag = self.aborts.start(job.request_id)
        try:
            outcome = run_script(job.message["code"], {}, timeout_s=30, abort=flag)
        finally:
            self.aborts.finish(job.request_id)
        return protocol.execute_result(job.request_id, outcome.ok, False, outcome.stdout, [], None, 1,
                                       error_info=outcome.error, extra={"cancelled": outcome.cancelled})

    def handle(self, message: dict) -> None:
        self.router.handle(json.dumps(message))

    def execute(self, request_id: str, code: str) -> None:
        self.handle({"type": "execute", "request_id": request_id, "mode": "automate", "code": code, "timeout_s": 30})

    def reply(self, request_id: str) -> dict:
        wait_until(lambda: any(m.get("request_id") == request_id for m in self.sent), timeout=10)
        return validate_host_message(next(m for m in self.sent if m.get("request_id") == request_id))


def test_a_job_revit_has_not_picked_up_is_abandoned_and_never_runs():
    rig = Rig()
    rig.execute("q1", "print('ran')")
    wait_until(lambda: len(rig.dispatcher.queue) == 1)
    rig.handle({"type": "abort", "request_id": "q1"})
    reply = rig.reply("q1")
    assert reply["type"] == "execute_result" and reply["cancelled"] is True and reply["committed"] is False
    assert reply["error"] == {"type": "Cancelled", "message": protocol.CANCELLED_BEFORE, "line": None,
                              "traceback": ""}
    assert rig.dispatcher.drain("uiapp") == 0 and rig.ran == []  # Revit idles later: the job is gone


def test_a_running_script_stops_at_its_next_checkpoint_even_through_a_bare_except():
    rig = Rig()
    rig.execute("r1", SLOW_LOOP)
    main = threading.Thread(target=rig.dispatcher.drain, args=("uiapp",), daemon=True)
    main.start()
    wait_until(lambda: rig.ran == ["r1"])
    time.sleep(0.2)
    aborted_at = time.monotonic()
    rig.handle({"type": "abort", "request_id": "r1"})
    reply = rig.reply("r1")
    assert time.monotonic() - aborted_at < 1.0
    assert reply["cancelled"] is True and reply["ok"] is False
    assert reply["error"]["type"] == "Cancelled" and reply["error"]["message"] == CANCELLED
    main.join(5)


def test_an_abort_discards_a_held_change_and_one_for_nothing_is_a_harmless_answer():
    rig = Rig()
    run = rig.registry.begin("h1", 900)
    rig.handle({"type": "abort", "request_id": "h1"})
    assert run.decision == DISCARD and run.decided_by == holds.BY_CLOUD
    final = protocol.execute_result("h1", True, False, "", [], None, 1)
    assert rig.registry.settle(run, final) is final  # the main thread's rollback answers the abort

    rig.handle({"type": "abort", "request_id": "nothing"})
    assert rig.reply("nothing") == {"type": "aborted", "request_id": "nothing", "state": "none",
                                    "message": "nothing to abort: request nothing is not queued, running or held "
                                               "in Revit"}


def test_a_script_aborted_on_revits_main_thread_is_rolled_back(revit):
    services = runtime_module("run_services").RunServices(RuntimeLog())
    code = ("level = DB.FilteredElementCollector(doc).OfClass(DB.Level).FirstElement()\n"
            "DB.Wall.Create(doc, DB.Line.CreateBound(DB.XYZ(100, 100, 0), DB.XYZ(130, 100, 0)), level.Id, False)\n"
            + SLOW_LOOP)
    message = {"type": "execute", "request_id": "m1", "mode": "automate", "code": code, "timeout_s": 30}
    before = revit.document_bytes()

    def abort_once_running() -> None:
        wait_until(lambda: services.aborts._flags.get("m1") is not None, timeout=10)
        time.sleep(0.2)
        assert services.aborts.abort("m1")

    aborter = threading.Thread(target=abort_once_running, daemon=True)
    aborter.start()
    reply = revit.run_on_main(runtime_module("executor").execute, revit.uiapp, message, RuntimeLog(), services)
    aborter.join(5)
    reply = validate_host_message(reply)
    assert reply["cancelled"] is True and reply["committed"] is False
    assert reply["error"]["type"] == "Cancelled" and reply["error"]["message"] == CANCELLED
    assert revit.document_bytes() == before
