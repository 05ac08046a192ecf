"""Fixtures for the evaluator's tests: small suites written into tmp_path, and the real browser."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import browser, browser_factory, playwright_driver  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "evals"


class SuiteMaker:
    """Write a suite folder: a model, tasks with inline checkers, scripted conversations."""

    def __init__(self, root: Path) -> None:
        self.root = root
        for name in ("tasks", "checkers", "scripts", "models"):
            (root / name).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SHIPPED / "models" / "small-office.ifc", root / "models" / "small.ifc")

    def task(self, task_id: str, checker: str, turns: list[list[dict[str, Any]]] | None = None,
             prompt: str = "Do the thing.", **fields: Any) -> None:
        data = {"id": task_id, "prompt": prompt, "model": fields.pop("model", "models/small.ifc"),
                "check": f"checkers/{task_id}.py", "tags": fields.pop("tags", ["test"]), **fields}
        (self.root / "tasks" / f"{task_id}.json").write_text(json.dumps(data))
        (self.root / "checkers" / f"{task_id}.py").write_text(checker)
        if turns is not None:
            (self.root / "scripts" / f"{task_id}.json").write_text(json.dumps({"turns": turns}))

    @property
    def scripted(self) -> str:
        return f"scripted:{self.root / 'scripts'}"


@pytest.fixture
def make_suite(tmp_path: Path) -> SuiteMaker:
    return SuiteMaker(tmp_path / "suite")
