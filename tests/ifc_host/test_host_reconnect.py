"""What the IFC host does when its connection ends, against the real orchestrator: a revoked token (close
4401) and a host id taken over by another connection (close 4409) stop it with a message and an exit status;
any other drop is retried with capped, jittered backoff."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import websocket

from cloud.host_sockets import close
from ifc_host.launcher import EXIT_HOST_ID_TAKEN, EXIT_TOKEN_REFUSED, HostProcess, start_host_process
from ifc_host.runtime import HostRejected, HostReplaced, ReconnectPolicy, start_host_thread
from tests.conformance.hosts import sample_building
from tests.support.client import Client
from tests.support.server import RunningServer

FAST = ReconnectPolicy(first_delay_s=0.05, max_delay_s=0.5)


def _model(tmp_path: Path) -> Path:
    model = tmp_path / "model.ifc"
    model.write_bytes(sample_building().read_bytes())
    return model


def _token_id(server: RunningServer, token: str) -> str:
    user = server.state.store.user_for_token(token)
    assert user is not None and user.token_id
    return user.token_id


def _exit_status(host: HostProcess, timeout: float = 60) -> int:
    try:
        return host.process.wait(timeout)
    finally:
        host.stop()


def _take_over(server: RunningServer, token: str, host_id: str) -> websocket.WebSocket:
    """A second connection of the same user saying hello with the host's id (a second host for one id)."""
    hello = dict(server.state.hosts.get(host_id).hello, host_id=host_id)
    ws = websocket.create_connection(server.ws_url, header=[f"Authorization: Bearer {token}"], timeout=20)
    ws.send(json.dumps(hello))
    welcome = json.loads(ws.recv())
    assert welcome == {"type": "welcome", "host_id": host_id}
    return ws


def test_a_token_revoked_mid_connection_ends_the_host_process_with_status_3(server: RunningServer,
                                                                             tmp_path: Path):
    token = server.token("ifc-revoked")
    host = start_host_process(_model(tmp_path), server.url, token, log_path=tmp_path / "host.log")
    try:
        host_id = server.wait_for_host(token, timeout=60)
        # Only the store: the server's own recheck of connected hosts closes the socket with 4401.
        assert server.state.store.revoke_token(_token_id(server, token))
        status = _exit_status(host)
    finally:
        host.stop()
    log = host.log_path.read_text()
    assert status == EXIT_TOKEN_REFUSED, log
    assert "revoked this host's token" in log and "Traceback" not in log
    assert "reconnecting in" not in log  # it stopped at once instead of meeting a 401 on a reconnect
    deadline = time.monotonic() + 15  # the server forgets the host once its side of the socket has ended
    while server.state.hosts.get(host_id) is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.state.hosts.get(host_id) is None


def test_an_admin_revoking_the_token_stops_a_host_thread_at_once(server: RunningServer, tmp_path: Path):
    token = server.token("ifc-admin-revoked")
    handle = start_host_thread(str(_model(tmp_path)), server.url, token, reconnect=FAST)
    try:
        handle.wait_connected(30)
        admin = Client(server.url, server.token("root", admin=True))
        revoked = admin.call("DELETE", f"/api/admin/tokens/{_token_id(server, token)}")
        assert revoked.status_code == 200 and revoked.json()["hosts_disconnected"] == 1
        assert handle.finished.wait(20)
        assert isinstance(handle.error, HostRejected) and "revoked" in str(handle.error)
        assert handle.runtime.connections == 1
    finally:
        handle.stop()


def test_a_host_whose_id_is_taken_over_stops_with_status_4_and_leaves_the_id_to_the_newer(
        server: RunningServer, tmp_path: Path):
    token = server.token("ifc-twice")
    host = start_host_process(_model(tmp_path), server.url, token, log_path=tmp_path / "host.log")
    newer = None
    try:
        host_id = server.wait_for_host(token, timeout=60)
        newer = _take_over(server, token, host_id)
        status = _exit_status(host)
        log = host.log_path.read_text()
        assert status == EXIT_HOST_ID_TAKEN, log
        assert f"took this host id ({host_id}) over" in log and "Traceback" not in log
        # The older host did not come back for its id: the newer connection still holds it and is served.
        time.sleep(1.0)
        connection = server.state.hosts.get(host_id)
        assert connection is not None and connection.hello["type"] == "hello"
        newer.send(json.dumps({"type": "ping", "nonce": "still-here"}))
        assert json.loads(newer.recv()) == {"type": "pong", "nonce": "still-here"}
    finally:
        host.stop()
        if newer is not None:
            newer.close()


def test_a_host_thread_taken_over_reports_host_replaced(server: RunningServer, tmp_path: Path):
    token = server.token("ifc-thread-twice")
    handle = start_host_thread(str(_model(tmp_path)), server.url, token, reconnect=FAST)
    newer = None
    try:
        host_id = handle.wait_connected(30)
        newer = _take_over(server, token, host_id)
        assert handle.finished.wait(20)
        assert isinstance(handle.error, HostReplaced) and host_id in str(handle.error)
        assert handle.runtime.connections == 1
    finally:
        handle.stop()
        if newer is not None:
            newer.close()


@pytest.mark.parametrize("code", [1001, 1011, 4000])
def test_other_closes_are_retried_and_keep_the_host_id(server: RunningServer, tmp_path: Path, code: int):
    token = server.token(f"ifc-drop-{code}")
    handle = start_host_thread(str(_model(tmp_path)), server.url, token, reconnect=FAST)
    try:
        host_id = handle.wait_connected(30)
        first = server.state.hosts.get(host_id)
        with server.state.sockets._lock:
            sockets = [s.ws for s in server.state.sockets._open.values() if s.host_id == host_id]
        assert len(sockets) == 1
        close(sockets[0], code, "going away for a moment")
        deadline = time.monotonic() + 30
        while handle.runtime.connections < 2 and time.monotonic() < deadline:
            assert not handle.finished.is_set(), handle.error
            time.sleep(0.02)
        assert handle.runtime.connections == 2 and handle.error is None
        assert server.wait_for_host(token) == host_id and server.state.hosts.get(host_id) is not first
    finally:
        handle.stop()


def test_reconnect_delays_grow_to_a_cap_with_jitter():
    policy = ReconnectPolicy(first_delay_s=0.5, max_delay_s=4.0, factor=2.0, jitter=0.2)
    runs = [[next(delays) for _ in range(8)] for delays in (policy.delays() for _ in range(50))]
    for delays in runs:
        for delay, base in zip(delays, [0.5, 1.0, 2.0, 4.0, 4.0, 4.0, 4.0, 4.0], strict=True):
            assert base * 0.8 <= delay <= base * 1.2
    assert len({round(r[0], 6) for r in runs}) > 1  # jittered: hosts that dropped together do not return together


def test_a_stop_while_connected_ends_the_host_without_an_error(server: RunningServer, tmp_path: Path):
    token = server.token("ifc-stopped")
    handle = start_host_thread(str(_model(tmp_path)), server.url, token, reconnect=FAST)
    handle.wait_connected(30)
    stopper = threading.Thread(target=handle.stop)
    stopper.start()
    stopper.join(40)
    assert handle.finished.is_set() and handle.error is None
