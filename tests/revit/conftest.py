"""Fixtures for the Revit extension tests: the extension's lib on sys.path, and a fake Revit session."""
from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[2] / "NexusAI.extension"
LIB = EXTENSION / "lib"
if str(LIB) not in sys.path:
    sys.path.insert(0, str(LIB))

from tests.revit.fake_revit import FakeRevit, install, uninstall  # noqa: E402
from tests.revit.fake_revit.common import Session  # noqa: E402


@pytest.fixture(autouse=True)
def no_revit_api_use_off_the_main_thread(request) -> Iterator[None]:
    """Real Revit (and WPF) refuse calls from other threads; the fake records each attempt. None may happen
    in any test, except those that provoke one on purpose (marked `provokes_thread_violation`)."""
    Session.violations.clear()
    yield
    violations = list(Session.violations)
    Session.violations.clear()
    if request.node.get_closest_marker("provokes_thread_violation") is None:
        assert violations == []


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "provokes_thread_violation: the test calls the fake Revit API off its main thread")


@pytest.fixture
def revit() -> Iterator[FakeRevit]:
    """A started fake Revit 2026 session with the sample project open, installed as sys.modules."""
    session = install(FakeRevit())
    session.start()
    yield session
    session.stop()
    uninstall()


def make_revit(**options) -> FakeRevit:
    session = install(FakeRevit(**options))
    return session.start()


def runtime_module(name: str):
    """A Revit-facing nexus_runtime module; import it only while a fake session is installed."""
    import importlib
    return importlib.import_module("nexus_runtime." + name)
