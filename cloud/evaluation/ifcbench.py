"""Import a question set in the ifc-bench CSV shape (`question,answer,ifc_model,...`) as a suite folder.

Each row becomes a read-only task `ifcbench-<n>` whose expected answer is written as data, an answer file
`checkers/ifcbench-<n>.json`, read by the one fixed checker cloud.evaluation.answer_check: it compares the
final answer with the expected one through the tolerant matcher and requires the model to be left unchanged.
No Python is written from the CSV. The `ifc_model` column is a path to the IFC file, relative to the CSV's
folder (or absolute); each file is placed in the suite's `models/` (hard-linked where the file system allows,
else copied), since a task's model must lie inside its suite.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

from cloud.evaluation.answer_check import write_answer

REQUIRED = ("question", "answer", "ifc_model")


class ImportError_(ValueError):  # noqa: N801 (not the builtin ImportError)
    pass


def _place_model(source: Path, models: Path, placed: dict[Path, str]) -> str:
    """The suite-relative path of `source` in `models/`, placing it there once (a name taken by another
    file gets a number)."""
    source = source.resolve()
    if source in placed:
        return placed[source]
    name, number = source.name, 1
    while f"models/{name}" in placed.values() or _taken(models / name, source):
        number += 1
        name = f"{source.stem}-{number}{source.suffix}"
    target = models / name
    if not target.exists():
        try:
            os.link(source, target)
        except OSError:
            shutil.copyfile(source, target)
    placed[source] = f"models/{name}"
    return placed[source]


def _taken(target: Path, source: Path) -> bool:
    """Whether `target` holds another file than `source` (the same file, from an earlier import, is reused)."""
    if not target.exists():
        return False
    return not (target.samefile(source) or target.read_bytes() == source.read_bytes())


def import_csv(csv_path: Path, suite: Path) -> int:
    """Write `suite`/tasks, `suite`/checkers (answer files) and `suite`/models for every row; the number of tasks."""
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
    checked = []
    for number, row in enumerate(rows, start=1):
        question, expected, ifc = ((row.get(c) or "").strip() for c in REQUIRED)
        if not (question and expected and ifc):
            raise ImportError_(f"{csv_path}: row {number + 1}: question, answer and ifc_model must be filled")
        model = Path(ifc) if Path(ifc).is_absolute() else (csv_path.parent / ifc)
        if not model.is_file():
            raise ImportError_(f"{csv_path}: row {number + 1}: ifc_model {model} is not a file")
        checked.append((number, row, question, expected, model))
    for folder in ("tasks", "checkers", "models"):
        (suite / folder).mkdir(parents=True, exist_ok=True)
    placed: dict[Path, str] = {}
    for number, row, question, expected, model in checked:
        task_id = f"ifcbench-{number:04d}"
        write_answer(suite / "checkers" / f"{task_id}.json", expected)
        extra = [f"{k}:{v}" for k, v in row.items() if k not in REQUIRED and k and isinstance(v, str) and v
                 and len(v) < 40]
        task = {"id": task_id, "prompt": question, "model": _place_model(model, suite / "models", placed),
                "check": f"checkers/{task_id}.json", "tags": ["ifcbench", *extra[:4]], "policy": "readonly"}
        (suite / "tasks" / f"{task_id}.json").write_text(json.dumps(task, indent=1) + "\n")
    return len(rows)
