"""Evaluation results for the admin console: the server reads the report folders `nexus eval --out` wrote
under one folder it is configured with (NEXUS_EVAL_RESULTS), newest first. Nothing else is read."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cloud.evaluation.report import RESULTS_FILE

ENV = "NEXUS_EVAL_RESULTS"
MAX_REPORTS = 50
RUN_FIELDS = ("task", "model", "repeat", "status", "detail", "tags", "turns", "tool_calls", "fixes", "input_tokens",
              "cached_tokens", "output_tokens", "cost", "seconds")


def results_folder() -> Path | None:
    value = os.environ.get(ENV, "").strip()
    return Path(value) if value else None


def list_evaluations(folder: Path, limit: int = MAX_REPORTS) -> list[dict[str, Any]]:
    """Every readable results.json one or two levels under `folder` (a report folder, or one per model),
    as {name, created, suite, summary, runs}; unreadable ones are left out."""
    found: list[dict[str, Any]] = []
    paths = sorted({*folder.glob(f"*/{RESULTS_FILE}"), *folder.glob(f"*/*/{RESULTS_FILE}")})
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            summary = data["summary"]
            runs = [{k: run.get(k) for k in RUN_FIELDS} for run in data["runs"]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        found.append({"name": str(path.parent.relative_to(folder)), "created": data.get("created"),
                      "suite": Path(str(data.get("suite", ""))).name, "summary": summary, "runs": runs})
    found.sort(key=lambda e: str(e["created"] or ""), reverse=True)
    return found[:limit]
