"""Orchestrator settings, with defaults a demanding user would accept; tests shorten the timers.

`Settings.from_env()` reads the deployment's choices from NEXUS_* variables (see README, "Security").
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

SECRET_ENV = "NEXUS_SECRET"
REDIS_URL_ENV = "NEXUS_REDIS_URL"
MIN_SECRET_CHARS = 32


class ConfigurationError(ValueError):
    """The deployment cannot start as configured; the message is one line saying what to set."""


def redis_secret(required: bool = False) -> bytes:
    """NEXUS_SECRET, which signs every message between server processes through Redis (b"" when unset and
    not `required`). With NEXUS_REDIS_URL set it is required: whoever can write to Redis would otherwise
    run code on every connected host."""
    value = os.environ.get(SECRET_ENV, "").strip()
    if not value:
        if required or os.environ.get(REDIS_URL_ENV):
            given = f"{REDIS_URL_ENV} is set" if os.environ.get(REDIS_URL_ENV) else "a Redis URL is given"
            raise ConfigurationError(f"{given} but {SECRET_ENV} is not: set {SECRET_ENV} to the same "
                                     f"random value (at least {MIN_SECRET_CHARS} characters, e.g. `openssl rand -hex "
                                     f"32`) on every server process; it signs their messages through Redis")
        return b""
    if len(value) < MIN_SECRET_CHARS:
        raise ConfigurationError(f"{SECRET_ENV} is {len(value)} characters long: use at least {MIN_SECRET_CHARS} "
                                 f"(e.g. `openssl rand -hex 32`)")
    return value.encode("utf-8")


# Environment variable -> setting, for what an operator tunes without code.
ENVIRONMENT = {
    "NEXUS_TRUSTED_PROXIES": "trusted_proxies",
    "NEXUS_WEB_SESSION_HOURS": "web_session_hours",
    "NEXUS_QUOTA_SESSIONS_PER_HOUR": "quota_sessions_per_hour",
    "NEXUS_QUOTA_CONCURRENT_RUNS": "quota_concurrent_runs",
    "NEXUS_QUOTA_HOSTS": "quota_hosts",
    "NEXUS_QUOTA_REQUESTS_PER_MINUTE": "quota_requests_per_minute",
    "NEXUS_QUOTA_CONCURRENT_BATCHES": "quota_concurrent_batches",
}


@dataclass(frozen=True)
class Settings:
    tool_timeout_s: float = 600.0  # how long a suspended tool call waits for its host
    approval_timeout_s: float = 900.0  # how long a previewed change waits for Keep/Discard (then: discard)
    keepalive_s: float = 15.0  # SSE comment frame cadence while nothing else is sent
    script_timeout_s: float = 300.0  # deadline sent to the host for one script
    max_fixes: int = 5  # automation attempts after a failed run
    max_iterations: int = 3  # automation attempts after a committed run
    heavy_max_tokens: int = 32_000
    light_max_tokens: int = 4_096
    max_result_chars: int = 20_000  # the model's copy of one tool output
    max_turns: int = 60  # model turns in one run, a guard against a model that never stops
    image_max_px: int = 1568  # when the model adapter does not say
    # Reverse proxies in front of the server whose X-Forwarded-* headers are believed (0: none).
    trusted_proxies: int = 0
    web_session_hours: float = 12.0  # a browser sign-in lasts this long (sign-out or revocation end it sooner)
    # Per-user quotas (0 turns one off); exceeding one is a 429 with a JSON error naming it.
    quota_sessions_per_hour: int = 300
    quota_concurrent_runs: int = 8
    quota_hosts: int = 10
    quota_requests_per_minute: int = 1200
    quota_concurrent_batches: int = 2  # batches of the user's still running (each runs many hosts)
    host_recheck_s: float = 2.0  # how often a connected host's token is checked for revocation

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Defaults, then NEXUS_* environment variables, then explicit overrides."""
        types = {f.name: f.type for f in dataclasses.fields(cls)}
        values: dict[str, object] = {}
        for variable, name in ENVIRONMENT.items():
            raw = os.environ.get(variable)
            if raw is None or not raw.strip():
                continue
            try:
                values[name] = int(raw) if types[name] == "int" else float(raw)
            except ValueError as exc:
                raise ValueError(f"{variable}: expected a number, got {raw!r}") from exc
        return cls(**{**values, **overrides})
