"""What the app's routes share: the store, the host directory, the rendezvous, runs in progress, settings."""
from __future__ import annotations

from dataclasses import dataclass

from flask import current_app

from cloud.config import Settings
from cloud.hostlink import HostDirectory
from cloud.rendezvous import ToolResultChannel
from cloud.runs import RunRegistry
from cloud.store import Store


@dataclass
class NexusState:
    store: Store
    settings: Settings
    hosts: HostDirectory
    channel: ToolResultChannel
    runs: RunRegistry
    default_model: str | None = None


def nexus() -> NexusState:
    return current_app.extensions["nexus"]
