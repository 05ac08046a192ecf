"""Fixtures of the IFC host's tests: the small conformance building, and real keeper and script processes on it."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ifc_host import render_pool
from ifc_host.executor import IsolatedExecutor
from tests.conformance.ifc_models import write_small_building


@pytest.fixture()
def model_path(tmp_path: Path) -> Path:
    return write_small_building(tmp_path / "model.ifc")


@pytest.fixture()
def executor(model_path: Path) -> Iterator[IsolatedExecutor]:
    runner = IsolatedExecutor(model_path)
    yield runner
    runner.close()


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[render_pool.RenderPool]:
    """A render pool of this test's own (no server kept from other tests' renders)."""
    fresh = render_pool.RenderPool()
    monkeypatch.setattr(render_pool, "pool", fresh)
    yield fresh
    fresh.close_all()
