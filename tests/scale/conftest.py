from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from cloud.distributed.hosts import RedisHostDirectory
from tests.conftest import FAST
from tests.scale.servers import RedisServer, fresh_database, postgres_server, redis_server
from tests.support.server import RunningServer, running_server


@pytest.fixture
def redis(tmp_path) -> Iterator[RedisServer]:
    with redis_server(tmp_path / "redis") as server:
        yield server


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    with postgres_server() as url:
        yield url


@pytest.fixture
def database_url(postgres) -> str:
    """A fresh database on the throwaway PostgreSQL server, shared by the instances of one test."""
    return fresh_database(postgres)


@pytest.fixture
def instances(tmp_path, scripts_dir, redis, database_url, monkeypatch) -> Iterator[tuple[RunningServer, RunningServer]]:
    """Two server instances (A, B) on one PostgreSQL database and one Redis, each its own run owner."""
    monkeypatch.setenv("NEXUS_REDIS_URL", redis.url)
    with ExitStack() as stack:
        a = stack.enter_context(running_server(tmp_path, db_path=database_url, **FAST))
        b = stack.enter_context(running_server(tmp_path, db_path=database_url, **FAST))
        assert isinstance(a.state.hosts, RedisHostDirectory) and a.state.runs.owner != b.state.runs.owner
        yield a, b
