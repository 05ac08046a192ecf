from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.batch.redis_server import RedisServer, start_redis
from tests.batch.support import make_models


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, list[Path]]:
    """2 generated models, corpus files (2 from packages, hand-placed ones where present), a truncated file and
    one the script fails on: more files than the two workers, each kind of good and bad file once or more."""
    return make_models(tmp_path_factory.mktemp("models") / "in", generated=2)


@pytest.fixture
def redis_server(tmp_path) -> Iterator[RedisServer]:
    server = start_redis(tmp_path)
    try:
        yield server
    finally:
        server.stop()
