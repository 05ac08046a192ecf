"""What the app's routes share: the store, the host directory, the rendezvous, runs in progress, settings."""
from __future__ import annotations

from dataclasses import dataclass, field

from flask import current_app

from cloud.config import Settings
from cloud.hostlink import HostDirectory
from cloud.rendezvous import ToolResultChannel
from cloud.runs import RunRegistry
from cloud.store import Store
from cloud.web.host_sockets import HostSockets
from cloud.web.quotas import RequestRate


@dataclass
class NexusState:
    store: Store
    settings: Settings
    hosts: HostDirectory
    channel: ToolResultChannel
    runs: RunRegistry
    default_model: str | None = None
    request_rate: RequestRate = field(default_factory=lambda: RequestRate(0))
    sockets: HostSockets = field(default_factory=HostSockets)


def nexus() -> NexusState:
    return current_app.extensions["nexus"]
