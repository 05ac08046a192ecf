from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from cloud.hosts.registry import register_provider
from tests.support.client import Client
from tests.support.server import RunningServer, running_server
from tests.support.test_host import TestHost, TestProvider

register_provider(TestProvider())

FAST = {"keepalive_s": 0.2, "tool_timeout_s": 5.0, "detach_grace_s": 2.0}


@pytest.fixture
def scripts_dir(tmp_path, monkeypatch) -> os.PathLike:
    directory = tmp_path / "scripts"
    directory.mkdir()
    monkeypatch.setenv("NEXUS_SCRIPTED_DIRS", str(directory))
    return directory


@pytest.fixture
def server(tmp_path, scripts_dir) -> Iterator[RunningServer]:
    with running_server(tmp_path, **FAST) as srv:
        yield srv


@pytest.fixture
def alice(server) -> Client:
    return Client(server.url, server.token("alice"))


@pytest.fixture
def host(server, alice) -> Iterator[TestHost]:
    test_host = TestHost(server.ws_url, alice.token).start()
    yield test_host
    test_host.stop()


@pytest.fixture
def recording_vendor(monkeypatch):
    """Enable the `recording:PATH` vendor (a scripted model that records each request's max_tokens)."""
    from cloud.vendors import registry
    from tests.support import recording_model

    monkeypatch.setitem(registry.VENDOR_MODULES, "recording", "tests.support.recording_model")
    recording_model.REQUESTS.clear()
    return recording_model.REQUESTS
