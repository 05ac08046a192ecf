"""Import a question set in the ifc-bench CSV shape (`question,answer,ifc_model,...`) as a suite folder.

Each row becomes a read-only task `ifcbench-<n>` whose checker compares the final answer with the expected one
through the tolerant matcher (cloud.evaluation.tolerant) and requires the model to be left unchanged. The
`ifc_model` column is a path to the IFC file, relative to the CSV's folder (or absolute); the suite refers
to it by a path relative to itself, so the files are not copied.
"""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path

CHECKER = '''"""ifc-bench question {number}: the answer must match {expected!r}; the model must not change."""
from cloud.evaluation import checks, tolerant

EXPECTED = {expected!r}


def check(before, after, answer):
    same, why = checks.unchanged(before, after)
    if not same:
        return False, why
    return tolerant.matches(EXPECTED, answer)
'''
REQUIRED = ("question", "answer", "ifc_model")


class ImportError_(ValueError):  # noqa: N801 (not the builtin ImportError)
    pass


def import_csv(csv_path: Path, suite: Path) -> int:
    """Write `suite`/tasks and `suite`/checkers for every row; returns the number of tasks."""
    try:
        with csv_path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                raise ImportError_(f"{csv_path}: missing column(s) {', '.join(missing)} "
                                   f"(expected question,answer,ifc_model,...)")
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ImportError_(f"{csv_path}: cannot read: {exc}") from exc
    if not rows:
        raise ImportError_(f"{csv_path}: no questions")
    (suite / "tasks").mkdir(parents=True, exist_ok=True)
    (suite / "checkers").mkdir(parents=True, exist_ok=True)
    for number, row in enumerate(rows, start=1):
        question, expected, ifc = (row.get(c, "").strip() for c in REQUIRED)
        if not (question and expected and ifc):
            raise ImportError_(f"{csv_path}: row {number + 1}: question, answer and ifc_model must be filled")
        model = Path(ifc) if Path(ifc).is_absolute() else (csv_path.parent / ifc)
        task_id = f"ifcbench-{number:04d}"
        (suite / "checkers" / f"{task_id}.py").write_text(CHECKER.format(number=number, expected=expected))
        extra = [f"{k}:{v}" for k, v in row.items() if k not in REQUIRED and k and v and len(v) < 40]
        task = {"id": task_id, "prompt": question,
                "model": os.path.relpath(model.resolve(), suite.resolve()),
                "check": f"checkers/{task_id}.py", "tags": ["ifcbench", *extra[:4]], "policy": "readonly"}
        (suite / "tasks" / f"{task_id}.json").write_text(json.dumps(task, indent=1) + "\n")
    return len(rows)
