from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.scale.servers import RedisServer, redis_server


@pytest.fixture
def redis(tmp_path) -> Iterator[RedisServer]:
    with redis_server(tmp_path / "redis") as server:
        yield server
