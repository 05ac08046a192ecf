"""The small server-side state a transcript cannot hold, and the phase it implies for the next turn."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from cloud.config import Settings


@dataclass
class SessionState:
    current_script: str | None = None  # what anchored edits apply to
    fix_count: int = 0  # automation attempts after a failed run, this run
    iteration_count: int = 0  # automation attempts after a committed run, this run
    last_completed_tool: str | None = None
    last_task_committed: bool | None = None  # None: no automation yet in this run
    cap_reached: bool = False

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SessionState:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def start_run(self) -> None:
        """Budgets are per run (one user message); the script survives so later edits can apply."""
        self.fix_count = self.iteration_count = 0
        self.last_task_committed = None
        self.last_completed_tool = None
        self.cap_reached = False


@dataclass
class Session:
    session_id: str
    user_name: str
    host_id: str | None
    model_spec: str | None
    state: SessionState = field(default_factory=SessionState)
    transcript: list[dict[str, Any]] = field(default_factory=list)


class Phase(Enum):
    INITIAL = "initial"  # nothing inspected or written yet: the first full script may follow
    POST_DATA_COLLECTION = "post_data_collection"  # data came back; the next turn likely writes a script
    EDIT = "edit"  # a script exists and its last run did not commit: a fix
    VERIFY = "verify"  # the last automation committed: mostly a decision, not a script
    SUMMARY = "summary"  # a budget cap was reached: an honest summary is due


HEAVY_PHASES = {Phase.INITIAL, Phase.POST_DATA_COLLECTION, Phase.EDIT}


def resolve_phase(state: SessionState) -> Phase:
    if state.cap_reached:
        return Phase.SUMMARY
    if state.last_completed_tool == "execute_task_automation" and state.last_task_committed:
        return Phase.VERIFY
    if state.current_script and state.last_task_committed is False:
        return Phase.EDIT
    if state.last_completed_tool == "execute_data_collection":
        return Phase.POST_DATA_COLLECTION
    return Phase.INITIAL


def max_tokens_for(phase: Phase, settings: Settings) -> int:
    return settings.heavy_max_tokens if phase in HEAVY_PHASES else settings.light_max_tokens
