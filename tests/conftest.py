from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cloud.hosts.registry import register_provider
from tests.support.client import Client
from tests.support.server import RunningServer, running_server
from tests.support.test_host import TestHost, TestProvider

# The test host is served only because the tests register its provider (it is not in the product).
register_provider(TestProvider())

FAST = {"keepalive_s": 0.2, "tool_timeout_s": 5.0}

# Set by .ci/run: in CI a skipped test is a failure (a missing browser, stub package or project module
# must never pass as a skip).
FAIL_ON_SKIP = os.environ.get("NEXUS_FAIL_ON_SKIP") == "1"
# The deployment secret that signs messages through Redis (required with NEXUS_REDIS_URL): one for every
# server a test starts, in this process or a child, so they trust each other.
TEST_SECRET = "test-secret-" + "0123456789abcdef" * 3
os.environ.setdefault("NEXUS_SECRET", TEST_SECRET)


def _skip_fails(report: pytest.CollectReport | pytest.TestReport) -> None:
    if FAIL_ON_SKIP and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped, and skips fail in CI (NEXUS_FAIL_ON_SKIP=1): {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _skip_fails(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _skip_fails(outcome.get_result())


_SESSION_STARTED = time.time()
CONTACT_SHEETS = Path(__file__).resolve().parents[1] / ".cache" / "artifacts" / "contact-sheets"


def pytest_terminal_summary(terminalreporter) -> None:
    """Say where this run's corpus contact sheets are (tests/corpus writes one PNG per file, in any worker)."""
    written = [p for p in CONTACT_SHEETS.glob("*.png") if p.stat().st_mtime >= _SESSION_STARTED - 1]
    if written:
        terminalreporter.write_line(f"corpus contact sheets ({len(written)} files, every view): {CONTACT_SHEETS}")


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


@pytest.fixture(scope="session")
def small_building_file(tmp_path_factory) -> Path:
    """The small conformance building, built once per test process (ifcopenshell.api: a third of a second each
    time); tests copy it, never write it."""
    from tests.conformance.ifc_models import write_small_building  # IfcOpenShell: only for the tests that ask

    return write_small_building(tmp_path_factory.mktemp("small-building") / "model.ifc")


@pytest.fixture
def building_host(server, alice, tmp_path, small_building_file) -> Iterator[tuple[str, Path]]:
    """alice's real IFC host serving the small conformance building (tmp_path/model.ifc): (host id, path)."""
    import shutil

    from tests.support.real_ifc import connected_host

    model_path = tmp_path / "model.ifc"
    shutil.copyfile(small_building_file, model_path)
    with connected_host(model_path, server.url, alice.token) as (_, host_id):
        yield host_id, model_path


@pytest.fixture
def raw_cloud():
    """A bare websocket endpoint standing in for the cloud: a host's messages, byte for byte."""
    from tests.conformance.raw_cloud import RawCloud

    cloud = RawCloud().start()
    yield cloud
    cloud.stop()


@pytest.fixture
def scripted_requests(monkeypatch) -> list:
    """Every TurnRequest the scripted model is streamed, in order: what the model was shown."""
    from cloud.vendors import scripted

    seen: list = []
    original = scripted.ScriptedModel.stream

    def recording(self, request, cancel):
        seen.append(request)
        return (yield from original(self, request, cancel))

    monkeypatch.setattr(scripted.ScriptedModel, "stream", recording)
    return seen


@pytest.fixture
def recording_vendor(monkeypatch):
    """Enable the `recording:PATH` vendor (a scripted model that records each request's max_tokens)."""
    from cloud.vendors import registry
    from tests.support import recording_model

    monkeypatch.setitem(registry.VENDOR_MODULES, "recording", "tests.support.recording_model")
    recording_model.REQUESTS.clear()
    return recording_model.REQUESTS


@pytest.hookimpl(optionalhook=True)  # xdist's hook: absent with -p no:xdist
def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile hands the longest file to the next free worker (tests/support/longest_first.py)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.support.longest_first import LongestFileFirst

    return LongestFileFirst(config, log)
