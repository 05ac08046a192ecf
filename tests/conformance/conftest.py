"""Fixtures of the host conformance suite: every test runs once per launcher in hosts.LAUNCHERS."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cloud.contract import validate_host_message
from tests.conformance.hosts import LAUNCHERS, HostLauncher, LaunchedHost
from tests.support.server import RunningServer


@pytest.fixture(params=sorted(LAUNCHERS))
def launcher(request: pytest.FixtureRequest) -> HostLauncher:
    return LAUNCHERS[request.param]


@pytest.fixture
def token(server: RunningServer) -> str:
    return server.token("conformance")


@pytest.fixture
def host(launcher: HostLauncher, server: RunningServer, token: str, tmp_path) -> Iterator[LaunchedHost]:
    launched = launcher.launch(tmp_path / "host", server.url, token)
    yield launched
    launched.stop()


class Commander:
    """Sends cloud->host commands through the real server and checks every reply against the contract."""

    def __init__(self, server: RunningServer, host: LaunchedHost) -> None:
        self.server = server
        self.host = host

    def send(self, message: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        reply = self.server.send_to_host(self.host.host_id, message, timeout=timeout)
        return validate_host_message(reply)

    def run(self, code: str, mode: str = "collect", timeout_s: float = 10, **extra: Any) -> dict[str, Any]:
        reply = self.send({"type": "execute", "mode": mode, "code": code, "timeout_s": timeout_s, **extra},
                          timeout=timeout_s + 30)
        assert reply["type"] == "execute_result", reply
        return reply

    def output(self, code: str) -> str:
        reply = self.run(code)
        assert reply["ok"], reply.get("error")
        return reply["stdout"]


@pytest.fixture
def cloud(server: RunningServer, host: LaunchedHost) -> Commander:
    return Commander(server, host)
