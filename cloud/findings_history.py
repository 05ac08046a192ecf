"""Findings per model over time: every check run over a whole model records one row (the model, what ran, who, the
findings counted by severity) in the store's `finding_runs` part (migration 0011). The runs
recorded: a rule set run on demand on a session's host (`POST /api/sessions/<id>/check`), a check skill's run
(`run_skill`), and the rule set `nexus batch --rules` runs over each resulting file.

`by_day` is what the admin console charts: for each day and model, the findings of the last run that day of each
distinct check (rule set or check skill) on it, summed, so running the same check twice counts it once."""
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from cloud.store.finding_runs import FindingRuns
from ifc_host.findings import Finding
from ifc_host.rule_set import count_by_severity

SOURCES = ("check", "check skill", "batch")


def day_of(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def record_run(history: FindingRuns, *, model: str, source: str, check_name: str, findings: Iterable[Finding],
               user_name: str | None = None, session_id: str | None = None, ts: float | None = None) -> None:
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
    counts = count_by_severity(findings)
    now = time.time() if ts is None else ts
    history.record_finding_run(ts=now, day=day_of(now), model=model, source=source, check_name=check_name,
                               user_name=user_name, session_id=session_id, errors=counts["error"],
                               warnings=counts["warning"], infos=counts["info"])


def by_day(history: FindingRuns) -> list[dict[str, Any]]:
    """[{day, model, errors, warnings, infos, runs}] oldest day first: per day and model, the last run that day of
    each check, summed over the checks."""
    rows = history.finding_counts()
    last: dict[tuple[str, str, str], Any] = {}
    count: dict[tuple[str, str], int] = {}
    for r in rows:
        last[(r["day"], r["model"], r["check_name"])] = r
        count[(r["day"], r["model"])] = count.get((r["day"], r["model"]), 0) + 1
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for (day, model, _check), r in last.items():
        sums = out.setdefault((day, model), {"day": day, "model": model, "errors": 0, "warnings": 0, "infos": 0,
                                             "runs": count[(day, model)]})
        for key in ("errors", "warnings", "infos"):
            sums[key] += r[key]
    return [out[k] for k in sorted(out)]
