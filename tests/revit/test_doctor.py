"""NexusAI Doctor (issue 16): the ribbon button in the fake Revit (a table in Revit, the report sent to the
server) and the `doctor` host command through the real orchestrator's admin API."""
from __future__ import annotations

import pytest

from cloud.contract import validate_host_message
from tests.revit.harness import start_revit_host
from tests.revit.test_extension_ui import press, started  # noqa: F401 (fixture)
from tests.support.client import Client
from tests.support.waiting import wait_until

CHECK_IDS = ["trace_lines", "traceback_line", "json_unicode", "external_event", "rollback", "export_image",
             "webview2", "server"]


def doctor_window(revit):
    wait_until(lambda: revit.windows and not revit.windows[-1]._closed and hasattr(revit.windows[-1], "report_text"))
    return revit.windows[-1]


def test_the_doctor_button_shows_a_table_and_names_the_fallback_of_what_failed(started):  # noqa: F811
    revit, runtime = started({"server_url": "http://127.0.0.1:9", "token": "t", "auto_connect": False},
                             webview2_runtime="120.0.2210.91")  # nothing listens on port 9; WebView2 too old
    before = revit.document_bytes()
    press(revit, "Doctor")
    window = doctor_window(revit)
    table = window.report_text.Text
    revit.run_on_main(window.close_button.click)
    assert "6 of 8 checks passed" in table
    for title in ("Trace hook sees script lines", "Errors name the right script line", "JSON keeps non-ASCII text",
                  "Revit picks up requests", "A rolled-back transaction leaves no change", "ExportImage writes a PNG"):
        assert f"PASS  {title}" in table
    assert "FAIL  WebView2 can show the chat in the pane" in table
    assert "fallback: The pane offers 'Open chat in browser' instead." in table
    assert "FAIL  Proxy and websocket reach the server" in table  # not configured
    assert "line events 1,2,3,2,3,2,4" in table and "reported on line 3" in table
    assert revit.document_bytes() == before  # the rollback probe left nothing behind
    assert "This Revit has no connection" not in window.sent_text.Text


@pytest.fixture
def revit_host(server):
    host = start_revit_host(server.url, server.token("alice"))
    yield host
    host.stop()


def test_the_admin_runs_the_doctor_on_a_host_and_the_console_lists_it(server, revit_host):
    admin = Client(server.url, server.token("root", admin=True))
    response = admin.call("POST", f"/api/admin/hosts/{revit_host.host_id}/doctor")
    assert response.status_code == 200, response.text
    report = validate_host_message(response.json()["doctor"])
    assert [c["id"] for c in report["checks"]] == CHECK_IDS
    assert report["ok"] is True, [c for c in report["checks"] if not c["ok"]]
    server_row = report["checks"][-1]
    assert server_row["detail"].startswith(server.url) and "(direct)" in server_row["detail"]

    hosts = admin.call("GET", "/api/admin/hosts").json()["hosts"]
    listed = next(h for h in hosts if h["host_id"] == revit_host.host_id)
    assert listed["doctor"] == report

    alice = Client(server.url, server.token("alice"))
    assert alice.call("POST", f"/api/admin/hosts/{revit_host.host_id}/doctor").status_code == 403
    assert admin.call("POST", "/api/admin/hosts/h_nobody/doctor").status_code == 404


def test_the_doctor_button_report_reaches_the_server_behind_a_proxy(server):
    host = start_revit_host(server.url, server.token("alice"), proxy_required=True)
    try:
        host.session.run_on_main(host.runtime.run_doctor_for_person)
        window = doctor_window(host.session)
        host.session.run_on_main(window.close_button.click)
        connection = server.state.hosts.get(host.host_id)
        wait_until(lambda: connection.doctor is not None)
        report = validate_host_message(connection.doctor)
        server_row = report["checks"][-1]
        assert server_row["ok"] is True and "through the proxy http://proxy.corp.example:8080/" in server_row["detail"]
    finally:
        host.stop()


def test_a_trace_check_without_inserted_deadline_checks_fails_and_names_the_fallback(revit, monkeypatch):
    from tests.revit.conftest import runtime_module

    def cannot_rewrite(code, tree):
        raise ValueError("no positions in this parse")

    monkeypatch.setattr(runtime_module("deadline"), "insert_checks", cannot_rewrite)
    row = runtime_module("doctor")._trace_lines()
    assert row["ok"] is False and row["detail"].endswith("deadline checks inserted: no")
    assert "a bare except: around one long library call cannot be stopped" in row["fallback"]


def test_a_host_without_the_doctor_capability_is_refused_by_name(server, host):
    admin = Client(server.url, server.token("root", admin=True))
    response = admin.call("POST", f"/api/admin/hosts/{host.host_id}/doctor")
    assert response.status_code == 409 and "does not offer NexusAI Doctor" in response.json()["error"]
