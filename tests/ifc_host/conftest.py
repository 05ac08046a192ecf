"""Fixtures of the IFC host's tests: the small conformance building, and real keeper and script processes on it
(one per test, or one per module and isolation for tests that change no model)."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ifc_host import render_pool
from ifc_host.executor import IsolatedExecutor
from ifc_host.keeper_process import ISOLATIONS
from ifc_host.sample import write_sample_model
from tests.conformance.ifc_models import write_small_building


@pytest.fixture()
def model_path(tmp_path: Path) -> Path:
    return write_small_building(tmp_path / "model.ifc")


@pytest.fixture()
def executor(model_path: Path) -> Iterator[IsolatedExecutor]:
    runner = IsolatedExecutor(model_path)
    yield runner
    runner.close()


@pytest.fixture(scope="module", params=ISOLATIONS)
def shared_executor(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                    ) -> Iterator[IsolatedExecutor]:
    """One keeper per isolation for a module's tests that change no model (a keeper start costs seconds of CPU,
    under spawn more)."""
    model = tmp_path_factory.mktemp(f"sandbox-{request.param}") / "model.ifc"
    write_sample_model(str(model))
    runner = IsolatedExecutor(model, isolation=request.param)
    yield runner
    runner.close()


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[render_pool.RenderPool]:
    """A render pool of this test's own (no server kept from other tests' renders)."""
    fresh = render_pool.RenderPool()
    monkeypatch.setattr(render_pool, "pool", fresh)
    yield fresh
    fresh.close_all()
