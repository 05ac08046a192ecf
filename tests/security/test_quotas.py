"""Per-user quotas: sessions, concurrent runs, hosts and requests, each a clear 429 JSON error."""
from __future__ import annotations

import pytest

from tests.support.client import Client, write_script
from tests.support.server import running_server
from tests.support.spine import BackgroundRun, collect, say, wait_until
from tests.support.test_host import TestHost

QUOTAS = {"quota_sessions_per_hour": 3, "quota_concurrent_runs": 1, "quota_hosts": 2,
          "quota_requests_per_minute": 40, "keepalive_s": 0.2, "tool_timeout_s": 5.0}


@pytest.fixture
def limited(tmp_path, scripts_dir):
    with running_server(tmp_path, **QUOTAS) as srv:
        yield srv


def _assert_429(response, quota: str) -> None:
    assert response.status_code == 429, response.text
    body = response.json()
    assert body["quota"] == quota and quota in body["error"] and int(response.headers["Retry-After"]) > 0


def test_sessions_per_hour_are_capped_per_user(limited):
    alice, bob = Client(limited.url, limited.token("alice")), Client(limited.url, limited.token("bob"))
    for _ in range(3):
        alice.new_session()
    _assert_429(alice.call("POST", "/api/sessions", json={}), "sessions per hour")
    assert bob.call("POST", "/api/sessions", json={}).status_code == 201  # another user is not affected


def test_concurrent_runs_are_capped_per_user(limited, scripts_dir):
    alice = Client(limited.url, limited.token("alice"))
    silent = TestHost(limited.ws_url, alice.token, silent=True).start()
    try:
        spec = write_script(scripts_dir / "slow.json", [collect("print(1)"), say("done")])
        first, second = alice.new_session(silent.host_id, spec), alice.new_session(silent.host_id, spec)
        run = BackgroundRun(alice, first, "go")
        run.wait_for("ToolCall")
        _assert_429(alice.call("POST", f"/api/sessions/{second}/messages", json={"text": "go"}), "concurrent runs")
        assert alice.call("POST", f"/api/sessions/{first}/cancel").status_code == 202
        run.join(10)
    finally:
        silent.stop()


def test_connected_hosts_are_capped_per_user(limited):
    token = limited.token("alice")
    hosts = [TestHost(limited.ws_url, token).start() for _ in range(2)]
    try:
        import websocket

        with pytest.raises(websocket.WebSocketBadStatusException) as refused:
            TestHost(limited.ws_url, token).start()
        assert refused.value.status_code == 429
    finally:
        for host in hosts:
            host.stop()


def test_requests_per_minute_are_capped_per_user(limited):
    alice, bob = Client(limited.url, limited.token("alice")), Client(limited.url, limited.token("bob"))
    statuses = [alice.call("GET", "/api/me").status_code for _ in range(45)]
    assert statuses[:40] == [200] * 40
    _assert_429(alice.call("GET", "/api/me"), "requests per minute")
    assert bob.call("GET", "/api/me").status_code == 200


def test_quotas_are_read_from_the_environment(monkeypatch):
    from cloud.config import Settings

    monkeypatch.setenv("NEXUS_QUOTA_CONCURRENT_RUNS", "7")
    monkeypatch.setenv("NEXUS_TRUSTED_PROXIES", "1")
    settings = Settings.from_env()
    assert settings.quota_concurrent_runs == 7 and settings.trusted_proxies == 1
    monkeypatch.setenv("NEXUS_QUOTA_HOSTS", "lots")
    with pytest.raises(ValueError, match="NEXUS_QUOTA_HOSTS"):
        Settings.from_env()


def test_the_in_memory_host_owner_map_forgets_disconnected_hosts(server, alice):
    hosts = [TestHost(server.ws_url, alice.token).start() for _ in range(5)]
    ids = [h.host_id for h in hosts]
    assert all(server.state.hosts.owner(i) == "alice" for i in ids)
    for host in hosts:
        host.stop()
    wait_until(lambda: all(server.state.hosts.owner(i) is None for i in ids), timeout=10)
    assert all(server.state.store.host_owner(i) == "alice" for i in ids)  # the store keeps ownership
