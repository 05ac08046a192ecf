"""What one server process shares between its front doors, started explicitly: the store, the settings, the host
directory, the tool-result rendezvous, the run registry and the open host sockets.

`start_core_state` also ends the runs a dead process left `running` and starts the sweep that keeps doing so
(their lease expired), so both happen once per process whichever doors it opens: the chat app (cloud/web), the
host gate alone (cloud/embedded.py), or both. `state.runs.close()` stops the sweep.

`warm_api_indexes`: build a host's API index (for `lookup_api`) as soon as it connects, so the first lookup is
answered at once. The chat server does; an embedded core (one command, whose runs seldom look the API up) builds
it at the first lookup instead: importing IfcOpenShell and walking its API cost about 1 CPU-s.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from cloud.assembly import recover_interrupted_runs
from cloud.config import Settings
from cloud.distributed import build_parts, start_recovery_sweep
from cloud.host_sockets import HostSockets
from cloud.hostlink import HostDirectory
from cloud.rendezvous import ResultChannel
from cloud.runs import RunRegistry
from cloud.store import Store


@dataclass
class CoreState:
    store: Store
    settings: Settings
    hosts: HostDirectory
    channel: ResultChannel
    runs: RunRegistry
    sockets: HostSockets = field(default_factory=HostSockets)
    warm_api_indexes: bool = True


def start_core_state(store: Store, settings: Settings, warm_api_indexes: bool = True) -> CoreState:
    hosts, channel, runs = build_parts(store)  # in Redis with NEXUS_REDIS_URL, else in this process
    # Runs a dead process left `running` end with every call answered; held changes are discarded on reconnect.
    recover_interrupted_runs(store, hosts)
    start_recovery_sweep(store, hosts, runs)  # and later, runs whose process died (their lease expired)
    return CoreState(store=store, settings=settings, hosts=hosts, channel=channel, runs=runs,
                     warm_api_indexes=warm_api_indexes)
