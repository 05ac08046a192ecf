"""The skills' user- and model-facing wording, kept as data (cloud/prompts/skills.json)."""
from __future__ import annotations

import json
from functools import cache

from cloud.prompts import text


@cache
def _messages() -> dict[str, str]:
    return json.loads(text("skills.json"))


def say(key: str, **values: object) -> str:
    return _messages()[key].format(**values)
