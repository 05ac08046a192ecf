"""What the app's routes share: the process's core state (store, hosts, rendezvous, runs, settings, host sockets)
and what only the web needs (the default model, the request rate)."""
from __future__ import annotations

from dataclasses import dataclass, field

from flask import current_app

from cloud.core_state import CoreState
from cloud.web.quotas import RequestRate


@dataclass
class NexusState(CoreState):
    default_model: str | None = None
    request_rate: RequestRate = field(default_factory=lambda: RequestRate(0))


def nexus() -> NexusState:
    return current_app.extensions["nexus"]
