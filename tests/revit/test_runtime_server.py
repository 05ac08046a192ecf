"""The Revit runtime (real code, fake Revit) against the real orchestrator over a real websocket:
busy Revit, Denied raises, a link that drops mid-run, fragmented frames, auth, and a whole agent run."""
from __future__ import annotations

import threading
import time

import pytest

from cloud.contract import validate_host_message
from tests.revit.harness import REVIT_SCRIPTS, start_revit_host
from tests.support.client import Client, write_script
from tests.support.spine import automate, collect, say, tool_result_texts


@pytest.fixture
def launch(server):
    hosts = []

    def start(user: str = "alice", **options):
        token = server.token(user)
        host = start_revit_host(server.url, token, **options)
        hosts.append(host)
        return host, token

    yield start
    for host in hosts:
        host.stop()


def run(server, host, code: str, mode: str = "collect", timeout_s: float = 10, **extra) -> dict:
    message = {"type": "execute", "mode": mode, "code": code, "timeout_s": timeout_s, **extra}
    return validate_host_message(server.send_to_host(host.host_id, message, timeout=timeout_s + 30))


@pytest.mark.parametrize("transport", ["clientwebsocket", "websocket-client"])
def test_both_transports_say_hello_and_serve(server, launch, transport):
    host, token = launch(transport=transport)
    assert server.wait_for_host(token) == host.host_id
    hello = validate_host_message(server.state.hosts.get(host.host_id).hello)
    assert hello["host_app"] == "revit" and hello["document"] == {"title": "Tower A"}
    assert hello["capabilities"] == ["execute", "export_view", "context", "hold", "doctor", "abort", "show_elements"]
    assert run(server, host, REVIT_SCRIPTS["count_elements"])["stdout"] == "12\n"


def test_the_context_snapshot_lists_levels_view_selection_and_counts(server, launch):
    host, _ = launch()
    door_ids = sorted(e.Id.Value for e in host.session.doc._elements.values() if type(e).__name__ == "FamilyInstance")
    host.session.uidoc.Selection.SetElementIds([host.session.doc._elements[i].Id for i in door_ids[:2]])
    reply = validate_host_message(server.send_to_host(host.host_id, {"type": "context"}))
    context = reply["context"]
    assert reply["ok"] is True and context["document"] == "Tower A"
    assert [level["name"] for level in context["levels"]] == ["Level 1", "Level 2", "Level 3"]
    assert [level["elevation"] for level in context["levels"]] == [0.0, 12.0, 24.0]
    assert context["active_view"] == "Level 1" and context["selection"] == door_ids[:2]
    assert context["counts"] == {"Walls": 12, "Doors": 6}
    assert context["host_version"].startswith("Revit 2026")


def test_a_job_behind_a_modal_dialog_is_answered_busy_and_never_applied_later(server, launch):
    host, _ = launch(busy_after_s=0.5)
    before = host.document_bytes()
    host.session.open_modal_dialog()
    started = time.monotonic()
    reply = run(server, host, REVIT_SCRIPTS["add_element"], mode="automate")
    assert 0.5 <= time.monotonic() - started < 5
    assert reply["ok"] is False and reply["timed_out"] is True
    assert reply["error"]["message"] == "Revit is busy (a dialog or an edit mode may be open; press Esc)"

    runs = host.session.handler_runs
    host.session.close_modal_dialog()  # Revit idles again: the late handler runs but drops the job
    deadline = time.monotonic() + 5
    while host.session.handler_runs == runs and time.monotonic() < deadline:
        time.sleep(0.02)
    assert host.session.handler_runs == runs + 1
    assert host.document_bytes() == before
    assert run(server, host, REVIT_SCRIPTS["count_elements"])["ok"] is True


def test_a_denied_event_is_reported_at_once_and_asks_for_a_reload(server, launch):
    """Issue 16, item 10: Denied is permanent; the person is told to reload, not 'busy' after 20 s."""
    host, _ = launch()
    before = host.document_bytes()
    host.session.fail_event_handlers()
    reply = run(server, host, REVIT_SCRIPTS["add_element"], mode="automate")
    assert reply["ok"] is False and reply["error"]["type"] == "RevitDenied"  # not "busy"
    assert "Reload pyRevit" in reply["error"]["message"] and not reply.get("timed_out")
    assert host.runtime.dispatcher.raise_results[-1] == "Denied"
    assert "reload pyRevit" in host.runtime.status()["summary"]
    assert host.document_bytes() == before


def test_a_result_made_while_the_link_is_down_is_delivered_after_reconnecting(server, launch):
    host, token = launch()
    host.session.open_modal_dialog()
    replies: list[dict] = []
    sender = threading.Thread(target=lambda: replies.append(
        run(server, host, REVIT_SCRIPTS["add_element"], mode="automate")))
    sender.start()
    deadline = time.monotonic() + 5
    while not len(host.runtime.dispatcher.queue) and time.monotonic() < deadline:
        time.sleep(0.01)
    host.runtime.connection.reconnect_now()  # the link drops while the job waits
    host.session.close_modal_dialog()  # the job runs at once; its reply cannot be sent yet
    sender.join(40)

    assert replies and replies[0]["committed"] is True
    assert host.runtime.connection.connected_count == 2
    assert server.wait_for_host(token) == host.host_id  # same host id after the reconnect


def test_large_frames_and_multibyte_text_cross_the_client_websocket(server, launch):
    host, _ = launch()
    filler = "é€" * 40000  # ~200 KB of UTF-8: many 16 KB receive fragments, characters split across them
    code = f"text = {filler!r}\nprint(len(text))\nprint('ü' * 100000)\n"
    reply = run(server, host, code)
    lines = reply["stdout"].splitlines()
    assert lines[0] == "80000" and lines[1] == "ü" * 100000


def test_a_wrong_token_keeps_retrying_until_the_settings_are_fixed(server, launch):
    from nexus_runtime.settings import Settings
    host, _ = launch(connect=False)
    host.runtime.settings = Settings.from_mapping(dict(host.runtime.settings.to_mapping(), token="wrong"))
    host.runtime.connection.reconnect_now()
    deadline = time.monotonic() + 10
    # the attempt in flight when the link was dropped fails first ("send failed"); the next one meets the 401
    while "401" not in (host.runtime.connection.last_error or "") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert host.runtime.status()["state"] != "connected" and "401" in host.runtime.connection.last_error

    good = server.token("frank")
    host.session.run_on_main(host.runtime.update_settings,
                             Settings.from_mapping(dict(host.runtime.settings.to_mapping(), token=good)))
    assert server.wait_for_host(good, timeout=15) == host.wait_connected().host_id


def test_a_whole_agent_run_uses_the_revit_provider_epilogue_and_view(server, launch, scripts_dir):
    host, token = launch()
    add_two_walls = (
        "level = [l for l in DB.FilteredElementCollector(doc).OfClass(DB.Level) if l.Name == 'Level 2'][0]\n"
        "for x in (200, 240):\n"
        "    DB.Wall.Create(doc, DB.Line.CreateBound(DB.XYZ(x, 0, 0), DB.XYZ(x, 30, 0)), level.Id, False)\n"
        "print('added 2 walls')\n")
    spec = write_script(scripts_dir / "walls.json", [
        collect(REVIT_SCRIPTS["count_elements"], text="Counting walls."),
        automate(add_two_walls),
        say("Two walls added on Level 2."),
    ])
    alice = Client(server.url, token)
    session_id = alice.new_session(host.host_id, spec)
    stream = alice.run(session_id, "Add two walls on level 2")

    assert stream.last["type"] == "Complete"
    results = stream.of("Metadata", "tool_result")
    automation = results[1]["metadata"]
    assert automation["committed"] is True and len(automation["changes"]["added"]) == 2
    report = automation["change_report"]
    assert "=== CHANGE REPORT ===" in report and "@@nexus" not in report
    assert report.count("Walls | Basic Wall : Generic - 200mm | Level: Level 2") == 2
    assert automation["directives"]["view"] == "Level 2" and automation["directives"]["geometry_changed"]
    image = automation["image"]  # {"error": ...} when the export failed
    assert "error" not in image and image["view"] == "Level 2" and image["width"] > 0 < image["height"]
    png = alice.call("GET", f"/api/sessions/{session_id}/images/{image['image_id']}")
    assert png.status_code == 200 and png.content[:8] == b"\x89PNG\r\n\x1a\n"
    messages = alice.call("GET", f"/api/sessions/{session_id}").json()["messages"]
    assert "Walls | Basic Wall : Generic - 200mm" in tool_result_texts(messages)[1]
    first_turn = str(messages[0]["content"])
    assert "Level 1 (0), Level 2 (12), Level 3 (24)" in first_turn and "Active view: Level 1" in first_turn

    audit = server.state.store.audit(session_id=session_id)
    epilogues = [a for a in audit if a["kind"] == "epilogue"]
    assert epilogues and all(a["host_app"] == "revit" and a["capability_version"] == "1.0.0" for a in epilogues)


@pytest.mark.parametrize("transport", ["clientwebsocket", "websocket-client"])
def test_a_token_revoked_mid_connection_stops_the_reconnects_until_new_settings(server, launch, transport):
    from nexus_runtime.settings import Settings
    host, token = launch(transport=transport)
    user = server.state.store.user_for_token(token)
    admin = Client(server.url, server.token("root", admin=True))
    revoked = admin.call("DELETE", f"/api/admin/tokens/{user.token_id}")
    assert revoked.status_code == 200 and revoked.json()["hosts_disconnected"] == 1

    connection = host.runtime.connection
    deadline = time.monotonic() + 15
    while not connection.gave_up() and time.monotonic() < deadline:
        time.sleep(0.02)
    status = host.runtime.status()
    assert status["state"] == "refused" and "revoked this token" in status["summary"], status
    deadline = time.monotonic() + 15  # the server forgets the host once its side of the socket has ended
    while server.state.hosts.for_user("alice") and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)  # and it does not come back by itself
    assert "Settings" in status["summary"] and connection.connected_count == 1 and connection.gave_up()
    assert server.state.hosts.for_user("alice") == []

    good = server.token("gina")
    host.session.run_on_main(host.runtime.update_settings,
                             Settings.from_mapping(dict(host.runtime.settings.to_mapping(), token=good)))
    assert server.wait_for_host(good, timeout=15) == host.wait_connected().host_id


def test_a_revit_whose_host_id_is_taken_over_stays_off_until_connect(server, launch):
    import json

    import websocket
    host, token = launch()
    host_id = host.host_id
    hello = dict(server.state.hosts.get(host_id).hello, host_id=host_id)
    newer = websocket.create_connection(server.ws_url, header=[f"Authorization: Bearer {token}"], timeout=20)
    try:
        newer.send(json.dumps(hello))
        assert json.loads(newer.recv()) == {"type": "welcome", "host_id": host_id}
        connection = host.runtime.connection
        deadline = time.monotonic() + 15
        while not connection.gave_up() and time.monotonic() < deadline:
            time.sleep(0.02)
        status = host.runtime.status()
        assert status["state"] == "replaced" and host_id in status["summary"], status
        assert status["wanted"] is False  # the Connect button offers to connect again
        time.sleep(1.0)  # it does not come back for the id by itself
        assert connection.connected_count == 1 and connection.gave_up()

        host.session.run_on_main(host.runtime.toggle_connection)  # the person presses Connect
        assert host.wait_connected().host_id == host_id and connection.connected_count == 2
    finally:
        newer.close()
