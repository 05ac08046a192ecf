"""The one way tests wait for a condition: poll it until it holds or the time is up (then fail saying what)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_until(condition: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> None:
    """Return as soon as `condition()` is truthy; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} not met within {timeout:g} s"
        time.sleep(0.02)
