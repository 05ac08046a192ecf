"""The one checker of question tasks whose expected answer is data (an ifc-bench import): a task's `check`
names an answer file `checkers/<id>.json`, `{"expected_answer": "..."}`, instead of a checker module.

The expected answer is only ever read as JSON text and compared with the final answer through the tolerant
matcher (cloud.evaluation.tolerant); the model must be left unchanged. Nothing in the file is run.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cloud.evaluation import checks, tolerant

SUFFIX = ".json"
FIELD = "expected_answer"


class AnswerFileError(ValueError):
    pass


def write_answer(path: Path, expected: str) -> None:
    path.write_text(json.dumps({FIELD: expected}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def read_answer(path: Path) -> str:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AnswerFileError(f"{path}: not readable JSON: {exc}") from exc
    if not isinstance(data, dict) or set(data) != {FIELD} or not isinstance(data[FIELD], str) \
            or not data[FIELD].strip():
        raise AnswerFileError(f"{path}: an answer file is {{\"{FIELD}\": \"non-empty text\"}} and nothing else")
    return data[FIELD]


def check(path: Path, before: Any, after: Any, answer: str) -> tuple[bool, str]:
    expected = read_answer(path)
    same, why = checks.unchanged(before, after)
    if not same:
        return False, why
    return tolerant.matches(expected, answer)
