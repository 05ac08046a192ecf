"""The Revit-free runtime modules, run for real under CPython (they run unchanged under IronPython)."""
from __future__ import annotations

import json
import struct
import threading
import time
import zlib

import pytest
from nexus_runtime import protocol
from nexus_runtime.backoff import Backoff
from nexus_runtime.browser_choice import embedded_browser_decision, runtime_major
from nexus_runtime.changes import ChangeSet
from nexus_runtime.dispatch import Dispatcher
from nexus_runtime.failure_log import FailureLog
from nexus_runtime.image_files import find_exported_image
from nexus_runtime.jobs import ABANDONED, DONE, Job
from nexus_runtime.png import fit_direction, png_size
from nexus_runtime.script_runner import run_script
from nexus_runtime.settings import Settings, apply_user_input, chat_url, websocket_url

from cloud.contract import validate_host_message
from tests.support.waiting import wait_until

# --- change merging ------------------------------------------------------------------------------


def test_changes_added_then_deleted_cancel_out():
    changes = ChangeSet()
    changes.record(added=[5, 6], modified=[], deleted=[])
    changes.record(added=[], modified=[6], deleted=[5])
    assert changes.as_message() == {"added": [6], "modified": [], "deleted": []}


def test_changes_modified_excludes_added_and_deleted():
    changes = ChangeSet()
    changes.record(added=[1], modified=[1, 2, 3], deleted=[])
    changes.record(added=[], modified=[3], deleted=[3])
    assert changes.as_message() == {"added": [1], "modified": [2], "deleted": [3]}
    assert not changes.is_empty() and ChangeSet().is_empty()


# --- failures --------------------------------------------------------------------------------------


def test_failure_log_merges_repeats_and_caps():
    log = FailureLog(max_entries=2)
    log.record("warning", "Walls overlap", [1, 2])
    log.record("warning", "Walls overlap", [2, 3])
    log.record("error", "Can't join", [])
    log.record("warning", "third kind")
    entries = log.entries()
    assert entries[0] == {"severity": "warning", "message": "Walls overlap", "element_ids": [1, 2, 3]}
    assert entries[1] == {"severity": "error", "message": "Can't join"}
    assert entries[2]["message"] == "1 further failure message(s) not listed"
    assert log.has_errors() and log.summary() == "Can't join"


# --- protocol ------------------------------------------------------------------------------------


def test_built_messages_are_contract_valid():
    validate_host_message(protocol.hello("2026 (26.0)", "2.7.12 (IronPython)", "Tower A", "h_1"))
    validate_host_message(protocol.hello("2026", "2.7.12", None))
    validate_host_message(protocol.busy_execute_result("r1", 20000.4))
    validate_host_message(protocol.export_view_ok("r2", "aGk=", 10, 5, "Level 1"))
    validate_host_message(protocol.export_view_error("r3", "no such view"))
    validate_host_message(protocol.error("bad", None))
    validate_host_message(protocol.pong("n"))
    validate_host_message(protocol.failed_reply_for({"type": "execute", "request_id": "r4"}, "NoDocument", "none"))


@pytest.mark.parametrize("message, field", [
    ({"type": "execute", "mode": "collect", "code": "x", "timeout_s": 1}, "request_id"),
    ({"type": "execute", "request_id": "r", "mode": "drop", "code": "x", "timeout_s": 1}, "mode"),
    ({"type": "execute", "request_id": "r", "mode": "collect", "timeout_s": 1}, "code"),
    ({"type": "execute", "request_id": "r", "mode": "collect", "code": "x", "timeout_s": 0}, "timeout_s"),
    ({"type": "execute", "request_id": "r", "mode": "collect", "code": "x", "timeout_s": True}, "timeout_s"),
    ({"type": "execute", "request_id": "r", "mode": "collect", "code": "x", "timeout_s": 1,
      "epilogue": {"code": "x"}}, "epilogue/sha256"),
])
def test_execute_checks_name_the_bad_field(message, field):
    with pytest.raises(protocol.ProtocolError, match=field):
        protocol.check_execute(message)


@pytest.mark.parametrize("max_px", [None, 8, 9000, 1.5, True])
def test_export_view_check_requires_a_sane_max_px(max_px):
    with pytest.raises(protocol.ProtocolError, match="max_px"):
        protocol.check_export_view({"type": "export_view", "request_id": "r", "max_px": max_px})


def test_decode_rejects_non_objects_and_non_json():
    for text in ("{nope", "[1]", '{"no_type": 1}'):
        with pytest.raises(protocol.ProtocolError):
            protocol.decode(text)


# --- jobs and the dispatcher ---------------------------------------------------------------------


def race_claim_against_abandon() -> dict[str, bool]:
    job = Job({"type": "execute", "request_id": "r"}, deadline=time.monotonic() + 10, created=time.monotonic())
    results: dict[str, bool] = {}
    start = threading.Barrier(2)

    def claim() -> None:
        start.wait()
        results["claimed"] = job.claim(time.monotonic())

    def abandon() -> None:
        start.wait()
        results["abandoned"] = job.abandon(time.monotonic())

    threads = [threading.Thread(target=claim), threading.Thread(target=abandon)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_a_job_leaves_pending_once_claim_and_abandon_race_safely():
    for _ in range(200):
        results = race_claim_against_abandon()
        assert results["claimed"] != results["abandoned"]


def test_a_claim_after_the_deadline_abandons_with_the_busy_reply():
    now = time.monotonic()
    job = Job({"type": "execute", "request_id": "late"}, deadline=now - 0.1, created=now - 5)
    assert job.claim(now) is False
    assert job.state == ABANDONED and job.wait_done(0)
    assert job.reply["error"]["message"] == protocol.BUSY_MESSAGE and job.reply["timed_out"] is True
    validate_host_message(job.reply)


class FakeMainThread:
    """Stands in for Revit's idle loop: runs the handler when the event was raised and Revit is idle."""

    def __init__(self, dispatcher: Dispatcher, responses: list[str]) -> None:
        self.dispatcher = dispatcher
        self.responses = responses  # what Raise() returns, in order; then "Accepted"
        self.raised = threading.Event()
        self.idle = threading.Event()
        self.idle.set()
        self.raise_calls = 0

    def raise_event(self) -> str:
        self.raise_calls += 1
        status = self.responses.pop(0) if self.responses else "Accepted"
        if status == "throw":
            raise RuntimeError("the event could not be raised")
        if status == "Accepted":
            self.raised.set()
        return status

    def run_when_idle(self) -> None:
        self.raised.wait(10)
        self.idle.wait(10)
        self.dispatcher.drain("uiapp")


def make_dispatcher(ran: list[str], sleeps: list[float] | None = None) -> Dispatcher:
    def run_job(job, uiapp):
        ran.append(job.request_id)
        return {"type": "execute_result", "request_id": job.request_id, "ok": True}

    def sleep(seconds: float) -> None:
        if sleeps is not None:
            sleeps.append(seconds)
        time.sleep(seconds)

    return Dispatcher(run_job, sleep=sleep)


def test_a_raise_that_throws_is_retried_with_backoff_until_accepted():
    ran: list[str] = []
    sleeps: list[float] = []
    dispatcher = make_dispatcher(ran, sleeps)
    main = FakeMainThread(dispatcher, ["throw", "throw", "throw"])
    dispatcher.attach_event(main.raise_event)
    worker = threading.Thread(target=main.run_when_idle)
    worker.start()

    reply = dispatcher.serve({"type": "execute", "request_id": "r1"}, pickup_timeout_s=5)
    worker.join()

    assert reply["ok"] is True and ran == ["r1"]
    assert main.raise_calls == 4
    assert len(sleeps) == 3 and sleeps[0] < sleeps[-1]  # backing off
    assert dispatcher.raise_results[-1] == "Accepted"
    assert all(r.startswith("Failed: ") for r in dispatcher.raise_results[-4:-1])


def test_denied_is_not_retried_the_job_is_refused_at_once_with_what_to_do():
    """Revit denies the event of a handler that failed, for good (issue 16, item 10)."""
    ran: list[str] = []
    sleeps: list[float] = []
    dispatcher = make_dispatcher(ran, sleeps)
    main = FakeMainThread(dispatcher, ["Denied", "Denied"])
    dispatcher.attach_event(main.raise_event)

    first = dispatcher.serve({"type": "execute", "request_id": "r1"}, pickup_timeout_s=30)
    second = dispatcher.serve({"type": "execute", "request_id": "r2"}, pickup_timeout_s=30)
    assert first["ok"] is False and first["error"]["type"] == "RevitDenied"
    assert "Reload pyRevit" in first["error"]["message"] and second["error"]["type"] == "RevitDenied"
    assert main.raise_calls == 2 and sleeps == [] and dispatcher.denied is True
    dispatcher.drain("uiapp")  # a handler that runs after all never runs a refused job
    assert ran == []


def test_a_job_not_picked_up_in_time_is_answered_busy_and_never_runs_later():
    ran: list[str] = []
    dispatcher = make_dispatcher(ran)
    main = FakeMainThread(dispatcher, [])
    main.idle.clear()  # a modal dialog is open
    dispatcher.attach_event(main.raise_event)

    started = time.monotonic()
    reply = dispatcher.serve({"type": "execute", "request_id": "stuck"}, pickup_timeout_s=0.3)
    waited = time.monotonic() - started

    assert 0.3 <= waited < 2
    assert reply["ok"] is False and reply["error"]["type"] == "RevitBusy" and reply["timed_out"] is True
    main.idle.set()  # the dialog closes; the late handler must drop the abandoned job
    main.run_when_idle()
    assert ran == []


def test_an_exception_in_a_job_becomes_a_reply_not_a_crash():
    def run_job(job, uiapp):
        raise ValueError("boom")
    dispatcher = Dispatcher(run_job)
    dispatcher.attach_event(lambda: "Accepted")
    job = dispatcher.submit({"type": "execute", "request_id": "r"}, 5)
    dispatcher.drain("uiapp")
    assert job.state == DONE and job.reply["error"]["type"] == "RuntimeFault" and "boom" in job.reply["error"]["message"]


def test_raise_that_throws_counts_as_not_accepted():
    dispatcher = Dispatcher(lambda job, ctx: {})

    def broken():
        raise RuntimeError("event disposed")
    dispatcher.attach_event(broken)
    reply = dispatcher.serve({"type": "export_view", "request_id": "r"}, pickup_timeout_s=0.2)
    assert reply == {"type": "export_view_result", "request_id": "r", "ok": False, "error": protocol.BUSY_MESSAGE}
    assert dispatcher.raise_results[0].startswith("Failed: event disposed")


def test_backoff_grows_to_its_maximum_and_resets():
    backoff = Backoff(1.0, 8.0, jitter=0.0)
    assert [backoff.next_delay() for _ in range(5)] == [1.0, 2.0, 4.0, 8.0, 8.0]
    backoff.reset()
    assert backoff.next_delay() == 1.0
    jittery = Backoff(1.0, 8.0, jitter=0.2, rng=lambda: 1.0)
    assert jittery.next_delay() == pytest.approx(1.2)


# --- scripts -------------------------------------------------------------------------------------


def test_a_script_prints_and_sees_its_globals():
    outcome = run_script("print(answer * 2)\n", {"answer": 21})
    assert outcome.ok and outcome.stdout == "42\n" and outcome.error is None


def test_a_failing_script_reports_its_own_line_and_frames():
    code = "def f():\n    raise KeyError('missing')\nx = 1\nf()\n"
    outcome = run_script(code, {})
    assert not outcome.ok
    assert outcome.error["type"] == "KeyError" and outcome.error["line"] == 2
    assert 'File "<nexus-script>", line 4, in <module>' in outcome.error["traceback"]
    assert "raise KeyError('missing')" in outcome.error["traceback"]
    assert "script_runner" not in outcome.error["traceback"]


def test_a_syntax_error_names_its_line():
    outcome = run_script("x = 1\nif x\n", {})
    assert outcome.error["type"] == "SyntaxError" and outcome.error["line"] == 2


def test_stdout_is_capped():
    outcome = run_script("for i in range(1000):\n    print('x' * 100)\n", {}, stdout_limit=1000)
    assert outcome.ok and len(outcome.stdout) == 1000 and outcome.stdout_truncated


def test_a_script_past_its_deadline_is_stopped_even_if_it_catches_exceptions():
    code = "n = 0\nwhile True:\n    try:\n        n += 1\n    except Exception:\n        pass\n"
    started = time.monotonic()
    outcome = run_script(code, {}, timeout_s=0.3)
    assert time.monotonic() - started < 3
    assert outcome.timed_out and outcome.error["type"] == "ScriptTimeout" and outcome.error["line"] in (2, 3, 4, 5, 6)


# --- images, browser, settings -------------------------------------------------------------------


def png_bytes(width: int, height: int) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + header
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk))


def test_png_size_reads_the_header_and_rejects_other_files():
    assert png_size(png_bytes(640, 427)) == (640, 427)
    with pytest.raises(ValueError):
        png_size(b"GIF89a" + b"\x00" * 30)
    assert fit_direction(100, 50) == "Horizontal" and fit_direction(50, 100) == "Vertical"


def test_the_exported_image_is_found_whatever_suffix_revit_added(tmp_path):
    (tmp_path / "nexus_view - Floor Plan - Level 1.png").write_bytes(png_bytes(2, 2))
    assert find_exported_image(str(tmp_path), "nexus_view", "Floor Plan - Level 1").endswith(
        "nexus_view - Floor Plan - Level 1.png")
    assert find_exported_image(str(tmp_path), "nexus_view", None).endswith("Level 1.png")
    (tmp_path / "nexus_view - Floor Plan - Level 1.png").unlink()
    assert find_exported_image(str(tmp_path), "nexus_view", "x") is None


@pytest.mark.parametrize("setting, loaded, version, embed", [
    ("auto", True, "150.0.3200.1", True),
    ("auto", True, "120.0.1.0", False),
    ("auto", True, None, False),
    ("auto", False, "150.0.1.0", False),
    ("off", True, "150.0.1.0", False),
])
def test_webview2_is_embedded_only_when_present_and_safe(setting, loaded, version, embed):
    decided, reason = embedded_browser_decision(setting, loaded, version, 149)
    assert decided is embed and reason
    assert runtime_major("149.0.1") == 149 and runtime_major("garbage") is None


def test_urls_derived_from_the_server_url():
    assert websocket_url("https://nexus.example.com/") == "wss://nexus.example.com/ws/host"
    assert websocket_url("http://127.0.0.1:8765") == "ws://127.0.0.1:8765/ws/host"
    assert chat_url("http://127.0.0.1:8765", "h_ab/c") == "http://127.0.0.1:8765/?host=h_ab%2Fc"
    assert chat_url("http://127.0.0.1:8765") == "http://127.0.0.1:8765/"


def test_settings_input_is_checked_and_an_empty_token_keeps_the_old_one():
    current = Settings(server_url="http://a", token="old")
    updated = apply_user_input(current, " https://b.example/ ", "")
    assert updated.server_url == "https://b.example" and updated.token == "old"
    assert apply_user_input(current, "http://c", "new").token == "new"
    with pytest.raises(ValueError):
        apply_user_input(current, "ftp://nope", "")
    restored = Settings.from_mapping(json.loads(json.dumps(updated.to_mapping())))
    assert restored.to_mapping() == updated.to_mapping()
    assert Settings.from_mapping({"auto_connect": "False", "busy_after_s": "5"}).auto_connect is False


# --- the connection, over an in-memory transport ---------------------------------------------------

class MemoryTransport:
    """One connection attempt: what the runtime sent, and a queue of what the 'server' says."""

    def __init__(self, fail_connect: bool = False) -> None:
        import queue
        self.inbound: queue.Queue = queue.Queue()
        self.sent: list[dict] = []
        self.connected_to: tuple[str, dict] | None = None
        self.fail_connect = fail_connect

    def connect(self, url, headers, timeout_s):
        from nexus_runtime.transport import TransportError
        if self.fail_connect:
            raise TransportError("connection refused")
        self.connected_to = (url, headers)

    def send_text(self, text):
        self.sent.append(json.loads(text))

    def receive_text(self):
        from nexus_runtime.transport import TransportClosed
        item = self.inbound.get(timeout=10)
        if item is None:
            raise TransportClosed("closed")
        return item

    def close(self):
        self.inbound.put(None)




def test_the_connection_says_hello_keeps_results_while_down_and_flushes_them_after_welcome():
    from nexus_runtime.connection import HostConnection
    from nexus_runtime.host_info import HostInfo
    from nexus_runtime.log import RuntimeLog

    attempts: list[MemoryTransport] = [MemoryTransport(fail_connect=True), MemoryTransport(), MemoryTransport()]
    made: list[MemoryTransport] = []

    def factory():
        made.append(attempts.pop(0))
        return made[-1]

    settings = Settings(server_url="https://nexus.example", token="tok")
    connection = HostConnection(factory, lambda: settings, HostInfo("2026 (26.0)", "Tower A", "2.7.12"),
                                RuntimeLog(), backoff=Backoff(0.01, 0.05, jitter=0.0))
    received: list[str] = []
    connection.set_message_handler(received.append)
    connection.start()
    try:
        wait_until(lambda: len(made) == 2 and made[1].sent)
        first = made[1]
        assert first.connected_to == ("wss://nexus.example/ws/host", {"Authorization": "Bearer tok"})
        hello = first.sent[0]
        assert hello["type"] == "hello" and "host_id" not in hello and hello["document"] == {"title": "Tower A"}
        assert connection.state == "connecting"  # the first attempt failed; this one waits for welcome
        first.inbound.put(json.dumps({"type": "welcome", "host_id": "h_1"}))
        wait_until(lambda: connection.state == "connected")
        first.inbound.put(json.dumps({"type": "ping"}))
        wait_until(lambda: [json.loads(t) for t in received] == [{"type": "ping"}])

        first.close()  # the link drops; a result finished meanwhile is kept
        wait_until(lambda: len(made) == 3 and made[2].sent)
        assert connection.send({"type": "execute_result", "request_id": "r1"}) is False
        assert connection.send({"type": "pong"}) is False  # not worth keeping
        second = made[2]
        assert second.sent[0]["host_id"] == "h_1"
        second.inbound.put(json.dumps({"type": "welcome", "host_id": "h_1"}))
        wait_until(lambda: len(second.sent) == 2)
        assert second.sent[1] == {"type": "execute_result", "request_id": "r1"}
        assert connection.send({"type": "pong"}) is True and second.sent[2] == {"type": "pong"}
    finally:
        connection.stop(2.0)
    assert connection.state == "stopped" and connection.connected_count == 2


def test_an_error_instead_of_welcome_is_retried_with_backoff():
    from nexus_runtime.connection import HostConnection
    from nexus_runtime.host_info import HostInfo
    from nexus_runtime.log import RuntimeLog

    made: list[MemoryTransport] = []

    def factory():
        transport = MemoryTransport()
        transport.inbound.put(json.dumps({"type": "error", "message": "unknown token"}))
        made.append(transport)
        return transport

    settings = Settings(server_url="http://127.0.0.1:1", token="bad")
    connection = HostConnection(factory, lambda: settings, HostInfo(), RuntimeLog(),
                                backoff=Backoff(0.01, 0.02, jitter=0.0))
    connection.start()
    try:
        wait_until(lambda: len(made) >= 3)
        assert "unknown token" in connection.last_error and connection.state != "connected"
    finally:
        connection.stop(2.0)


class ClosingTransport(MemoryTransport):
    """Welcomed at once; `close_with(code)` makes the 'server' close the link with that close code."""

    def __init__(self, host_id: str = "h_1") -> None:
        super().__init__()
        self.inbound.put(json.dumps({"type": "welcome", "host_id": host_id}))

    def close_with(self, code: int | None) -> None:
        self.inbound.put(("close", code))

    def receive_text(self):
        from nexus_runtime.transport import TransportClosed
        item = self.inbound.get(timeout=10)
        if item is None:
            raise TransportClosed("closed")
        if isinstance(item, tuple):
            raise TransportClosed("the server closed the connection", item[1])
        return item


def _connection(factory, settings_provider, backoff=None):
    from nexus_runtime.connection import HostConnection
    from nexus_runtime.host_info import HostInfo
    from nexus_runtime.log import RuntimeLog
    return HostConnection(factory, settings_provider, HostInfo(), RuntimeLog(),
                          backoff=backoff or Backoff(0.01, 0.02, jitter=0.0))


def _started_on_closing_transports():
    """A started connection whose every attempt gets a new ClosingTransport (listed in `made`)."""
    made: list[ClosingTransport] = []

    def factory():
        made.append(ClosingTransport())
        return made[-1]

    settings = Settings(server_url="http://127.0.0.1:1", token="tok")
    connection = _connection(factory, lambda: settings)
    connection.start()
    return made, connection


@pytest.mark.parametrize("code,state,words", [(4401, "refused", "revoked this token"),
                                              (4409, "replaced", "took host id h_1 over")])
def test_a_revoked_token_or_a_taken_over_id_ends_the_reconnects_until_connect(code, state, words):
    made, connection = _started_on_closing_transports()
    try:
        wait_until(lambda: connection.state == "connected")
        made[0].close_with(code)
        wait_until(connection.gave_up)
        assert connection.state == state and words in connection.last_error
        time.sleep(0.3)  # dozens of backoff delays: none of them brought a new attempt
        assert len(made) == 1 and connection.gave_up()

        connection.start()  # Connect: a fresh attempt, with the host id it had
        wait_until(lambda: connection.state == "connected" and len(made) == 2)
        assert made[1].sent[0]["host_id"] == "h_1" and connection.last_error is None
    finally:
        connection.stop(2.0)


@pytest.mark.parametrize("code", [None, 1000, 1001, 1011, 4000])
def test_other_closes_reconnect_with_backoff(code):
    made, connection = _started_on_closing_transports()
    try:
        wait_until(lambda: connection.state == "connected")
        made[0].close_with(code)
        wait_until(lambda: len(made) == 2 and connection.state == "connected")
        assert not connection.gave_up() and connection.connected_count == 2
    finally:
        connection.stop(2.0)


def test_settings_changed_while_an_attempt_starts_are_the_ones_it_connects_with():
    """The race behind the flaky wrong-token test: reconnect_now() lands after the connection thread read
    the settings but before its transport is the current one, so there is nothing to drop yet. The attempt
    must give way to one that reads the new settings, not connect with the old token."""
    made: list[ClosingTransport] = []
    settings = {"now": Settings(server_url="http://127.0.0.1:1", token="old")}
    connection = None

    def factory():
        if not made:  # the window: settings read, transport not yet installed
            settings["now"] = Settings(server_url="http://127.0.0.1:1", token="new")
            connection.reconnect_now()
        made.append(ClosingTransport())
        return made[-1]

    connection = _connection(factory, lambda: settings["now"], backoff=Backoff(5.0, 5.0, jitter=0.0))
    connection.start()
    try:
        wait_until(lambda: connection.state == "connected")
        tokens = [t.connected_to[1]["Authorization"] for t in made if t.connected_to]
        assert tokens == ["Bearer new"]  # and no backoff wait was spent on the abandoned attempt
    finally:
        connection.stop(2.0)
