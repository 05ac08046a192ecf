"""Signed values for everything one server process hands another through Redis (docs/deployment.md, "Redis").

Whoever can write to Redis could otherwise speak for any process: publish a host command (a script run on
someone's host), write a tool result or a decision a run then accepts, cancel runs. So each value is sealed
with the deployment's secret (NEXUS_SECRET, the same on every process): an HMAC-SHA256 over a purpose (the
Redis key or channel it belongs to, so a sealed value cannot be moved to another key), a timestamp and the
payload. A value that is unsigned, badly signed, sealed for another purpose or older than its maximum age
is dropped and logged; the reader then acts as if nothing had been written.
"""
from __future__ import annotations

import hashlib
import hmac
import logging
import time

from cloud.config import redis_secret

log = logging.getLogger(__name__)

VERSION = "s1"
MESSAGE_MAX_AGE_S = 300.0  # a message (pub/sub, an answer's copy) older than this is stale


class Signer:
    def __init__(self, secret: bytes) -> None:
        if not secret:
            raise ValueError("a signer needs a non-empty secret")
        self._secret = secret

    def _mac(self, purpose: str, stamp: str, payload: str) -> str:
        text = f"{purpose}\n{stamp}\n{payload}".encode()
        return hmac.new(self._secret, text, hashlib.sha256).hexdigest()

    def seal(self, payload: str, purpose: str) -> str:
        """`payload` with its timestamp and signature: `s1.<ms>.<hmac>.<payload>`."""
        stamp = str(int(time.time() * 1000))
        return f"{VERSION}.{stamp}.{self._mac(purpose, stamp, payload)}.{payload}"

    def unseal(self, sealed: object, purpose: str, max_age_s: float = MESSAGE_MAX_AGE_S) -> str | None:
        """The payload of a value this deployment sealed for `purpose` within `max_age_s`; None (logged)
        for anything else."""
        problem = self._problem(sealed, purpose, max_age_s)
        if problem is None:
            return str(sealed).split(".", 3)[3]
        log.warning("Redis: dropped a value for %s: %s", purpose, problem)
        return None

    def _problem(self, sealed: object, purpose: str, max_age_s: float) -> str | None:
        if isinstance(sealed, bytes):
            sealed = sealed.decode("utf-8", "replace")
        if not isinstance(sealed, str):
            return "not text"
        parts = sealed.split(".", 3)
        if len(parts) != 4 or parts[0] != VERSION or not parts[1].isdigit():
            return "unsigned"
        _, stamp, mac, payload = parts
        if not hmac.compare_digest(mac, self._mac(purpose, stamp, payload)):
            return "bad signature (another secret, another key, or forged)"
        age_s = time.time() - int(stamp) / 1000
        if age_s > max_age_s:
            return f"stale ({age_s:.0f} s old, at most {max_age_s:.0f} s)"
        if age_s < -max_age_s:
            return "dated in the future"
        return None


def signer_from_env() -> Signer:
    """The deployment's signer (NEXUS_SECRET); ConfigurationError when it is not set."""
    return Signer(redis_secret(required=True))
