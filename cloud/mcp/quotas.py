"""The deployment's per-user quotas on its MCP endpoint: the chat API's own (cloud/web/quotas.py).

Every tool call counts towards the requests per minute, in the same sliding window as the user's API
requests; a call that opens a session (a client's first call on a host, every run_task) is held to the
sessions per hour; run_task starts a run in the deployment's run registry and takes a slot among the
concurrent runs, shared with the chat page's runs (on every process, with Redis), in one atomic step.
"""
from __future__ import annotations

from dataclasses import dataclass

from cloud.config import Settings
from cloud.runs import RunRegistry
from cloud.store import Store
from cloud.web.quotas import RequestRate, RunSlot, check_sessions_per_hour, reserve_run


@dataclass
class DeploymentQuotas:
    store: Store
    settings: Settings
    runs: RunRegistry
    request_rate: RequestRate

    def admit_call(self, user: str) -> None:
        self.request_rate.admit(user)

    def admit_session(self, user: str) -> None:
        check_sessions_per_hour(self.store, self.settings, user)

    def admit_run(self, user: str) -> RunSlot:
        """A slot for the user's new run (released by the caller when the run ends or does not start)."""
        return reserve_run(self.settings, self.runs, user)
