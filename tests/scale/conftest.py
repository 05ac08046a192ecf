from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.scale.servers import RedisServer, fresh_database, postgres_server, redis_server


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
