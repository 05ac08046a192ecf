"""The small server-side state a transcript cannot hold, and the phase it implies for the next turn."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from cloud.config import Settings


class Outcome(Enum):
    """What a tool call did, as far as the phase and the budgets care."""
    COLLECTED = "collected"  # a read-only script ran (whatever its result)
    COMMITTED = "committed"  # an automation committed
    NOT_COMMITTED = "not_committed"  # an automation ran and did not commit, or its outcome is unknown
    CAPPED = "capped"  # an automation was refused because its budget was used up


@dataclass(frozen=True)
class BudgetCharge:
    """What the next automation would cost: nothing (the run's first), a fix, or an iteration."""
    kind: str | None  # "fix", "iteration", or None
    used: int = 0  # attempts of this kind already made in this run
    cap: int = 0

    @property
    def exhausted(self) -> bool:
        return self.kind is not None and self.used >= self.cap


@dataclass
class SessionState:
    """Written only through `start_run` and `record`, so the phase is always derived from one history."""
    current_script: str | None = None  # what anchored edits apply to
    fix_count: int = 0  # automation attempts after a failed run, this run
    iteration_count: int = 0  # automation attempts after a committed run, this run
    last_completed_tool: str | None = None
    last_task_committed: bool | None = None  # None: no automation yet in this run
    cap_reached: bool = False
    run_owner: str | None = None  # "<machine>:<pid>" of the process driving the session's run

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SessionState:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def start_run(self, owner: str | None = None) -> None:
        """Budgets are per run (one user message); the script survives so later edits can apply. `owner`
        names the process driving the run (see assembly.recover_interrupted_runs)."""
        self.run_owner = owner
        self.fix_count = self.iteration_count = 0
        self.last_task_committed = None
        self.last_completed_tool = None
        self.cap_reached = False

    def next_charge(self, settings: Settings) -> BudgetCharge:
        """The run's first automation is neither a fix nor an iteration; after that, the last outcome decides."""
        kind = self._charge_kind()
        if kind == "iteration":
            return BudgetCharge(kind, self.iteration_count, settings.max_iterations)
        if kind == "fix":
            return BudgetCharge(kind, self.fix_count, settings.max_fixes)
        return BudgetCharge(None)

    def record(self, tool: str, outcome: Outcome, script: str | None = None) -> None:
        """The one writer of what a tool call did. Lookups and captures are not recorded: they leave
        the phase (and so the output budget) where it was."""
        if outcome is Outcome.CAPPED:
            self.cap_reached = True
            return
        if outcome in (Outcome.COMMITTED, Outcome.NOT_COMMITTED):
            charge = self._charge_kind()
            if charge == "iteration":
                self.iteration_count += 1
            elif charge == "fix":
                self.fix_count += 1
            self.last_task_committed = outcome is Outcome.COMMITTED
            if script is not None:
                self.current_script = script
        self.last_completed_tool = tool

    def _charge_kind(self) -> str | None:
        if self.last_task_committed is None:
            return None
        return "iteration" if self.last_task_committed else "fix"


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
