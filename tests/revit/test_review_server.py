"""The person as reviewer with the Revit runtime (fake Revit) behind the real orchestrator over a real websocket
(issue 7): Keep and Discard from the chat page, a decision taken in Revit's review window, the hold timeout,
the preview image rendered while the change is held, approvals the model cannot give, and edits made
between turns reaching the model."""
from __future__ import annotations

import time

import pytest

from cloud.contract import validate_host_message
from tests.revit.fake_revit import db as DB
from tests.revit.harness import start_revit_host
from tests.support.client import Client, write_script
from tests.support.server import running_server
from tests.support.spine import BackgroundRun, automate, collect, say, tool_result_texts
from tests.support.waiting import wait_until

ADD_WALL = ("level = [l for l in DB.FilteredElementCollector(doc).OfClass(DB.Level) if l.Name == 'Level 1'][0]\n"
            "wall = DB.Wall.Create(doc, DB.Line.CreateBound(DB.XYZ(5, 5, 0), DB.XYZ(25, 5, 0)), level.Id, False)\n"
            "print('added wall', wall.Id.Value)\n")
FAST_REVIEW = {"review_window_after_s": 0.2}


@pytest.fixture
def stack(tmp_path, scripts_dir):
    """start(approval_timeout_s=..., **revit_settings) -> (client, host): a server and one Revit on it."""
    started: list = []

    def start(approval_timeout_s: float = 30.0, script_timeout_s: float = 10.0, **revit_settings):
        context = running_server(tmp_path, keepalive_s=0.2, tool_timeout_s=15.0,
                                 approval_timeout_s=approval_timeout_s, script_timeout_s=script_timeout_s)
        server = context.__enter__()
        started.append(context)
        client = Client(server.url, server.token("alice"))
        host = start_revit_host(server.url, client.token, **{**FAST_REVIEW, **revit_settings})
        started.append(host)
        return client, host

    yield start
    for item in reversed(started):
        if hasattr(item, "stop"):
            item.stop()
        else:
            item.__exit__(None, None, None)


def ask_session(client: Client, host, scripts_dir, turns: list) -> str:
    session_id = client.new_session(host.host_id, write_script(scripts_dir / "review.json", turns))
    response = client.call("PUT", f"/api/sessions/{session_id}/policy", json={"policy": "ask"})
    assert response.status_code == 200, response.text
    return session_id


def approve(client: Client, session_id: str, tool_call_id: str, decision: str) -> None:
    response = client.call("POST", f"/api/sessions/{session_id}/approval",
                           json={"tool_call_id": tool_call_id, "decision": decision})
    assert response.status_code == 202, response.text


def wall_ids(host) -> set[int]:
    return {e.Id.Value for e in host.session.doc._elements.values() if isinstance(e, DB.Wall)}




@pytest.mark.parametrize("decision", ["keep", "discard"])
def test_keep_and_discard_from_the_chat_page(stack, scripts_dir, decision):
    client, host = stack()
    before, walls_before = host.document_bytes(), wall_ids(host)
    session_id, run, meta = held_wall(client, host, scripts_dir)
    assert "Walls | Basic Wall : Generic - 200mm | Level: Level 1" in meta["change_report"]
    assert meta["image"] and meta["image"]["view"] == "Level 1"  # exported while the change was held
    assert len(wall_ids(host)) == len(walls_before) + 1 and host.runtime.services.holds.waiting()
    status = host.runtime.status()
    assert status["holding"] is True and "A change is held" in status["summary"]

    approve(client, session_id, meta["tool_call_id"], decision)
    stream = run.join()
    result = stream.of("Metadata", "tool_result")[0]["metadata"]
    assert result["decision"]["decision"] == decision and stream.last["type"] == "Complete"
    if decision == "keep":
        assert result["committed"] is True and len(wall_ids(host)) == len(walls_before) + 1
    else:
        assert result["committed"] is False and host.document_bytes() == before
    assert not host.runtime.services.holds.waiting() and not host.session.doc._groups


def _approval_request(run: BackgroundRun) -> dict:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = [f.chunk for f in run.frames if f.chunk and (f.chunk.get("metadata") or {}).get("kind")
                 == "approval_request"]
        if found:
            return found[0]
        time.sleep(0.02)
    raise TimeoutError("no approval_request")


def held_wall(client: Client, host, scripts_dir) -> tuple[str, BackgroundRun, dict]:
    """A session under `ask` whose run added a wall on Level 1 and holds it for a decision:
    (session id, the run, the approval request's metadata)."""
    session_id = ask_session(client, host, scripts_dir, [automate(ADD_WALL), say("Done.")])
    run = BackgroundRun(client, session_id, "add a wall on level 1")
    return session_id, run, _approval_request(run)["metadata"]


def review_window(host):
    """The window Revit shows for the held change, once it is open."""
    wait_until(lambda: host.session.windows and not host.session.windows[-1]._closed)
    return host.session.windows[-1]


def test_a_decision_taken_in_revit_wins_over_a_later_one_in_the_chat(stack, scripts_dir):
    client, host = stack()
    walls_before = wall_ids(host)
    session_id, run, request = held_wall(client, host, scripts_dir)
    window = review_window(host)
    assert window.Title.startswith("NexusAI: keep this change? (1 added")
    host.session.run_on_main(window.keep_button.click)  # the person decides in Revit
    wait_until(lambda: not host.runtime.services.holds.waiting())
    assert len(wall_ids(host)) == len(walls_before) + 1

    # Revit told the cloud (`decided`), so the run goes on without the chat page; a late click there is refused.
    result = run.join().of("Metadata", "tool_result")[0]["metadata"]
    assert result["committed"] is True and len(wall_ids(host)) == len(walls_before) + 1
    assert result["decision"]["decision"] == "keep" and "Revit" in result["decision"]["by"]
    late = client.call("POST", f"/api/sessions/{session_id}/approval",
                       json={"tool_call_id": request["tool_call_id"], "decision": "discard"})
    assert late.status_code == 409


def test_without_a_decision_the_hold_times_out_as_discard(stack, scripts_dir):
    client, host = stack(approval_timeout_s=2.0, hold_timeout_s=1.0)
    before = host.document_bytes()
    session_id = ask_session(client, host, scripts_dir, [automate(ADD_WALL), say("Discarded then.")])
    stream = client.run(session_id, "add a wall on level 1")
    result = stream.of("Metadata", "tool_result")[0]["metadata"]
    assert result["committed"] is False and result["decision"]["decision"] == "discard"
    assert host.document_bytes() == before
    assert host.session.windows and host.session.windows[-1]._closed  # shown, then closed by the timeout


def test_under_auto_the_held_change_is_kept_without_a_window(stack, scripts_dir):
    client, host = stack(review_window_after_s=1.5)
    walls_before = wall_ids(host)
    session_id = client.new_session(host.host_id, write_script(scripts_dir / "auto.json", [automate(ADD_WALL),
                                                                                         say("Done.")]))
    result = client.run(session_id, "add a wall").of("Metadata", "tool_result")[0]["metadata"]
    assert result["committed"] is True and result["decision"] == {"decision": "keep", "by": "policy"}
    assert result["image"] and len(wall_ids(host)) == len(walls_before) + 1
    assert host.session.windows == []


def test_an_approval_in_the_model_s_tool_input_runs_nothing(stack, scripts_dir):
    client, host = stack()
    before = host.document_bytes()
    sneaky = [{"tool_call": {"name": "execute_task_automation", "input": {"code": ADD_WALL, "decision": "keep"}}}]
    session_id = ask_session(client, host, scripts_dir, [sneaky, say("ok")])
    stream = client.run(session_id, "add a wall")
    assert not stream.of("Metadata", "approval_request")
    assert "decision" in stream.of("Metadata", "tool_result")[0]["content"]
    assert host.document_bytes() == before and host.session.windows == []


def test_edits_made_between_turns_reach_the_model_once(stack, scripts_dir):
    client, host = stack()
    count = "print(DB.FilteredElementCollector(doc).OfClass(DB.Wall).GetElementCount())\n"
    turns = [collect(count), say("12 walls."), collect(count), say("Noted."), collect(count), say("Same.")]
    session_id = client.new_session(host.host_id, write_script(scripts_dir / "turns.json", turns))
    client.run(session_id, "how many walls?")

    doc = host.session.doc
    walls = [e for e in doc._elements.values() if isinstance(e, DB.Wall)][:2]

    def person_edits():
        t = DB.Transaction(doc, "Mark walls")
        t.Start()
        for wall in walls:
            wall.LookupParameter("Mark").Set("checked")
        t.Commit()
    host.session.run_on_main(person_edits)

    client.run(session_id, "and now?")
    client.run(session_id, "and now?")
    texts = tool_result_texts(client.call("GET", f"/api/sessions/{session_id}").json()["messages"])
    assert "outside the agent" not in texts[0]
    assert texts[1].startswith("Note: since the previous run, the model was changed outside the agent "
                               "(2 elements modified in 'Tower A' by the person since the last run)")
    assert "outside the agent" not in texts[2]


def test_the_hold_protocol_against_a_raw_cloud(raw_cloud_revit):
    """Frame by frame: while a change is held, export_view and context are served, nothing but a decide for
    this request decides it, and the decide is answered with the final result."""
    connection, host = raw_cloud_revit
    connection.send({"type": "execute", "request_id": "h1", "mode": "automate", "code": ADD_WALL, "timeout_s": 10,
                     "hold": True})
    held = validate_host_message(connection.recv(timeout=20))
    assert held["type"] == "execute_result" and held["held"] is True and held["committed"] is False
    new_wall = held["changes"]["added"][0]

    connection.send({"type": "export_view", "request_id": "h1.view", "element_ids": [new_wall], "max_px": 200})
    image = validate_host_message(connection.recv(timeout=20))
    assert image["type"] == "export_view_result" and image["ok"] is True and image["view"] == "Level 1"
    connection.send({"type": "context", "request_id": "h1.ctx"})
    assert validate_host_message(connection.recv(timeout=20))["ok"] is True

    connection.send({"type": "execute", "request_id": "h2", "mode": "automate", "code": "pass", "timeout_s": 5,
                     "decision": "keep"})
    busy = connection.recv(timeout=20)
    assert busy["type"] == "error" and "busy" in busy["message"]
    connection.send({"type": "decide", "request_id": "h2", "decision": "keep"})
    assert "no automation is held" in connection.recv(timeout=20)["message"]
    connection.send({"type": "approve", "request_id": "h1"})
    assert connection.recv(timeout=20)["type"] == "error"
    assert host.runtime.services.holds.waiting() and new_wall in wall_ids(host)

    connection.send({"type": "decide", "request_id": "h1", "decision": "discard"})
    final = validate_host_message(connection.recv(timeout=20))
    assert final["request_id"] == "h1" and final["committed"] is False and "held" not in final
    assert final["details"]["decided_by"] == "the person in the chat page"
    assert new_wall not in wall_ids(host) and not host.runtime.services.holds.waiting()


@pytest.fixture
def raw_cloud_revit(tmp_path):
    from tests.conformance.raw_cloud import RawCloud
    cloud = RawCloud().start()
    host = start_revit_host(cloud.url, "raw-token", connect=False, review_window_after_s=30.0)
    try:
        connection = cloud.accept()
        connection.welcome("h_raw")
        yield connection, host
    finally:
        host.stop()
        cloud.stop()


def test_a_person_s_keep_in_revit_is_not_undone_by_the_link_dropping(stack, scripts_dir):
    """The held result went out; the link drops; the person keeps the change in Revit. The runtime keeps the
    final result for the cloud's decide, and the change stays."""
    client, host = stack()
    walls_before = wall_ids(host)
    session_id, run, request = held_wall(client, host, scripts_dir)
    review_window(host)
    host.runtime.connection.reconnect_now()
    host.session.run_on_main(host.session.windows[-1].keep_button.click)
    wait_until(lambda: host.runtime.status()["state"] == "connected")
    approve(client, session_id, request["tool_call_id"], "keep")
    result = run.join().of("Metadata", "tool_result")[0]["metadata"]
    assert result["committed"] is True and len(wall_ids(host)) == len(walls_before) + 1


def test_an_infinite_loop_that_swallows_every_exception_is_stopped_at_its_deadline(stack, scripts_dir):
    client, host = stack(script_timeout_s=0.5)
    before = host.document_bytes()
    stubborn = ADD_WALL + "while True:\n    try:\n        doc.GetElement(DB.ElementId(1))\n    except:\n        pass\n"
    session_id = client.new_session(host.host_id, write_script(scripts_dir / "loop.json", [automate(stubborn),
                                                                                         say("It hung.")]))
    result = client.run(session_id, "loop forever").of("Metadata", "tool_result")[0]
    assert result["metadata"]["timed_out"] is True and result["metadata"]["committed"] is False
    assert "overran its 0.5 s deadline" in result["content"]
    assert host.document_bytes() == before and host.session.windows == []
