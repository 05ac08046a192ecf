"""Model capabilities as data (models.json): context window, thinking mode, and vendor-specific flags.

API (stable): model_profile(vendor, model) -> dict
    The vendor's "default" entry with the longest matching fnmatch pattern's entry merged over it;
    {} for a vendor the table does not list. Other vendors' adapters may add their own section.
"""
from __future__ import annotations

import fnmatch
import json
from functools import cache
from pathlib import Path
from typing import Any

PROFILE_TABLE = Path(__file__).with_name("models.json")


@cache
def _table() -> dict[str, Any]:
    return json.loads(PROFILE_TABLE.read_text())


def model_profile(vendor: str, model: str) -> dict[str, Any]:
    section = _table().get(vendor)
    if not isinstance(section, dict):
        return {}
    profile = dict(section.get("default", {}))
    matches = [p for p in section.get("models", {}) if fnmatch.fnmatchcase(model, p)]
    if matches:
        profile.update(section["models"][max(matches, key=len)])
    return profile
