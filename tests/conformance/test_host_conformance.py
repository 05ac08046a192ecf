"""What every host runtime must do, checked over a real websocket against the real orchestrator.

Host-specific knowledge lives only in the launcher's script dialect (hosts.py). The tests that leave the
document as it was share one server and one host per launcher (`steady`): each checks, after it ran, that the
document is byte for byte what the host started with and the host still connected, so none hands a changed
host to the next. The tests that commit, and those that start their host themselves, get their own.
"""
from __future__ import annotations

import base64
import io
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from PIL import Image

from cloud.contract import validate_host_message
from cloud.hosts.registry import known_host_apps
from tests.conformance.conftest import Commander
from tests.conformance.hosts import LAUNCHERS, HostLauncher, LaunchedHost
from tests.conformance.raw_cloud import RawCloud
from tests.conftest import FAST
from tests.support.server import RunningServer, running_server


@dataclass
class Steady:
    server: RunningServer
    host: LaunchedHost
    token: str
    cloud: Commander
    document: bytes  # as the host started with it


@pytest.fixture(scope="module", params=sorted(LAUNCHERS))
def steady_host(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Steady]:
    folder = tmp_path_factory.mktemp(f"conformance-{request.param}")
    with running_server(folder, **FAST) as server:
        token = server.token("conformance")
        host = LAUNCHERS[request.param].launch(folder / "host", server.url, token)
        try:
            yield Steady(server, host, token, Commander(server, host), host.document_bytes())
        finally:
            host.stop()


@pytest.fixture()
def steady(steady_host: Steady) -> Iterator[Steady]:
    """The launcher's shared host, for a test that must leave its document unchanged."""
    yield steady_host
    if steady_host.host.document_bytes() != steady_host.document:
        pytest.fail("the test changed the shared host's document: it needs a host of its own")
    if steady_host.server.wait_for_host(steady_host.token) != steady_host.host.host_id:
        pytest.fail("the shared host is no longer connected as itself")


def test_hello_is_contract_valid_and_the_welcome_id_is_kept(steady: Steady):
    server, host, token = steady.server, steady.host, steady.token
    assert server.wait_for_host(token) == host.host_id
    hello = server.state.hosts.get(host.host_id).hello
    validate_host_message(hello)
    assert hello["type"] == "hello" and hello["document"]["title"]
    assert hello["host_app"] in known_host_apps()  # a host app this server has a provider for


def test_collect_never_changes_the_document(steady: Steady):
    cloud, host = steady.cloud, steady.host
    dialect = host.dialect
    ids = json.loads(cloud.output(dialect.pick_elements))
    before = host.document_bytes()
    names_before = cloud.output(dialect.read_names(ids))

    reply = cloud.run(dialect.rename(ids, "changed by a collect script"), mode="collect")

    assert reply["ok"] is True and reply["committed"] is False
    assert host.document_bytes() == before
    assert cloud.output(dialect.read_names(ids)) == names_before


def test_automate_commits_and_reports_exactly_the_modified_elements(cloud: Commander, host: LaunchedHost):
    dialect = host.dialect
    ids = json.loads(cloud.output(dialect.pick_elements))
    before = host.document_bytes()

    reply = cloud.run(dialect.rename(ids, "Renamed"), mode="automate")

    assert reply["ok"] is True and reply["committed"] is True, reply.get("error")
    assert reply["changes"] == {"added": [], "modified": sorted(ids), "deleted": []}
    assert json.loads(cloud.output(dialect.read_names(ids))) == {str(i): "Renamed" for i in ids}
    assert host.document_bytes() != before


def test_added_then_deleted_elements_are_reported_as_such(cloud: Commander, host: LaunchedHost):
    dialect = host.dialect
    count = int(cloud.output(dialect.count_elements))

    added = cloud.run(dialect.add_element, mode="automate")
    assert added["committed"], added.get("error")
    new_id = int(added["stdout"].strip().splitlines()[-1])
    assert added["changes"]["added"] == [new_id] and added["changes"]["deleted"] == []
    assert int(cloud.output(dialect.count_elements)) == count + 1

    deleted = cloud.run(dialect.delete_element(new_id), mode="automate")
    assert deleted["committed"], deleted.get("error")
    assert deleted["changes"]["deleted"] == [new_id] and deleted["changes"]["added"] == []
    assert int(cloud.output(dialect.count_elements)) == count


def test_a_failing_automation_rolls_back_and_says_where(steady: Steady):
    cloud, host = steady.cloud, steady.host
    dialect = host.dialect
    ids = json.loads(cloud.output(dialect.pick_elements))
    names_before = cloud.output(dialect.read_names(ids))
    before = host.document_bytes()

    reply = cloud.run(dialect.fail_after_change, mode="automate")

    assert reply["ok"] is False and reply["committed"] is False
    assert reply["error"]["type"] and reply["error"]["message"]
    assert reply["error"]["line"] == dialect.fail_line
    assert f"line {dialect.fail_line}" in reply["error"]["traceback"]
    assert reply["changes"] == {"added": [], "modified": [], "deleted": []}
    assert host.document_bytes() == before
    assert cloud.output(dialect.read_names(ids)) == names_before


def test_malformed_commands_get_an_error_reply_and_the_host_keeps_serving(steady: Steady):
    cloud, host = steady.cloud, steady.host
    unknown = cloud.send({"type": "bogus_command", "request_id": "r-unknown"})
    assert unknown["type"] == "error" and unknown["request_id"] == "r-unknown"
    assert "bogus_command" in unknown["message"]

    missing_code = cloud.send({"type": "execute", "request_id": "r-missing", "mode": "collect", "timeout_s": 5})
    assert missing_code["type"] == "error" and "code" in missing_code["message"]

    bad_mode = cloud.send({"type": "execute", "request_id": "r-mode", "mode": "destroy", "code": "pass",
                           "timeout_s": 5})
    assert bad_mode["type"] == "error" and "mode" in bad_mode["message"]

    assert cloud.run(host.dialect.count_elements)["ok"] is True


def test_export_view_returns_a_png_of_the_requested_size(steady: Steady):
    cloud, host = steady.cloud, steady.host
    reply = cloud.send({"type": "export_view", "view": host.dialect.view, "max_px": 320}, timeout=120)

    assert reply["type"] == "export_view_result" and reply["ok"] is True, reply.get("error")
    image = Image.open(io.BytesIO(base64.b64decode(reply["png_base64"])))
    image.load()
    assert image.format == "PNG"
    assert image.size == (reply["width"], reply["height"])
    assert max(image.size) == 320
    assert reply["view"] == host.dialect.view


def test_export_of_an_unknown_view_fails_cleanly(steady: Steady):
    cloud, host = steady.cloud, steady.host
    reply = cloud.send({"type": "export_view", "view": "No Such View 42", "max_px": 200}, timeout=120)

    assert reply["type"] == "export_view_result" and reply["ok"] is False and reply["error"]
    assert cloud.run(host.dialect.count_elements)["ok"] is True


def test_a_second_execute_while_one_runs_is_refused(steady: Steady):
    cloud, host = steady.cloud, steady.host
    results: list[dict] = []
    slow = threading.Thread(target=lambda: results.append(cloud.run(host.dialect.hang, timeout_s=3)))
    slow.start()
    time.sleep(0.5)

    refused = cloud.send({"type": "execute", "mode": "collect", "code": host.dialect.count_elements, "timeout_s": 5})
    slow.join(30)

    assert refused["type"] == "error" and "busy" in refused["message"]
    assert results and results[0]["ok"] is False and results[0].get("timed_out") is True
    assert cloud.run(host.dialect.count_elements)["ok"] is True


def test_raw_frames_ping_and_bad_json(launcher: HostLauncher, raw_cloud: RawCloud, tmp_path):
    launched = launcher.launch(tmp_path / "host", raw_cloud.url, "raw-token", connect=False)
    try:
        connection = raw_cloud.accept()
        assert connection.path == "/ws/host"
        assert connection.authorization == "Bearer raw-token"
        validate_host_message(connection.hello)
        connection.welcome("h_raw")

        connection.send({"type": "ping", "nonce": "n-1"})
        assert connection.recv() == {"type": "pong", "nonce": "n-1"}

        connection.send_raw("{this is not json")
        reply = connection.recv()
        assert reply["type"] == "error" and "JSON" in reply["message"]

        connection.send_raw("[1, 2, 3]")
        assert connection.recv()["type"] == "error"

        connection.send({"type": "execute", "request_id": "after-garbage", "mode": "collect",
                         "code": launched.dialect.count_elements, "timeout_s": 10})
        result = connection.recv(timeout=30)
        assert result["type"] == "execute_result" and result["request_id"] == "after-garbage" and result["ok"]
    finally:
        launched.stop()


def test_reconnects_and_keeps_its_host_id(launcher: HostLauncher, raw_cloud: RawCloud, tmp_path):
    launched = launcher.launch(tmp_path / "host", raw_cloud.url, "raw-token", connect=False)
    try:
        first = raw_cloud.accept()
        assert "host_id" not in first.hello
        first.welcome("h_keep_me")
        first.send({"type": "ping"})
        assert first.recv()["type"] == "pong"

        first.close()

        second = raw_cloud.accept(timeout=30)
        assert second.hello["host_id"] == "h_keep_me"
        second.welcome("h_keep_me")
        second.send({"type": "execute", "request_id": "after-reconnect", "mode": "collect",
                     "code": launched.dialect.count_elements, "timeout_s": 10})
        assert second.recv(timeout=30)["ok"] is True
    finally:
        launched.stop()
