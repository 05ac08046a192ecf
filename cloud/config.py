"""Orchestrator settings, with defaults a demanding user would accept; tests shorten the timers."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    tool_timeout_s: float = 600.0  # how long a suspended tool call waits for its host
    approval_timeout_s: float = 900.0  # how long a previewed change waits for Keep/Discard (then: discard)
    keepalive_s: float = 15.0  # SSE comment frame cadence while nothing else is sent
    detach_grace_s: float = 30.0  # a run with no listener for this long is cancelled
    script_timeout_s: float = 300.0  # deadline sent to the host for one script
    max_fixes: int = 5  # automation attempts after a failed run
    max_iterations: int = 3  # automation attempts after a committed run
    heavy_max_tokens: int = 32_000
    light_max_tokens: int = 4_096
    max_result_chars: int = 20_000  # the model's copy of one tool output
    max_turns: int = 60  # model turns in one run, a guard against a model that never stops
    image_max_px: int = 1568  # when the model adapter does not say
