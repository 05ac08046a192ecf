"""Cost estimates from a pricing table kept as data (pricing.json).

API (stable):

    Price(input, cache_read, cache_write, output)  -- US$ per million tokens
    price_for(spec) -> Price | None
        `spec` is "vendor:model"; table keys are fnmatch patterns, the longest match wins.
    estimate_cost(spec, usage) -> float | None
        US$ for a normalised Usage: uncached_input*input + cache_read*cache_read
        + cache_write*cache_write + output*output. `usage.output` already includes reasoning tokens
        (adapters normalise it so); `usage.reasoning` is a breakdown and is not billed twice.
        None when the model has no price in the table.
    billed_input_cost(spec, usage) / uncached_input_cost(spec, usage) -> float | None
        The input side only, with the cache as billed and as if nothing were cached (the benchmark's
        billed-input ratio is their quotient).
"""
from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from cloud.vendors.base import Usage

PRICING_TABLE = Path(__file__).with_name("pricing.json")
PER_TOKEN = 1 / 1_000_000


@dataclass(frozen=True)
class Price:
    input: float
    cache_read: float
    cache_write: float
    output: float


@cache
def _models() -> dict[str, dict[str, float]]:
    return json.loads(PRICING_TABLE.read_text())["models"]


@cache
def price_for(spec: str) -> Price | None:
    models = _models()
    matches = [pattern for pattern in models if fnmatch.fnmatchcase(spec, pattern)]
    if not matches:
        return None
    return Price(**models[max(matches, key=len)])


def billed_input_cost(spec: str, usage: Usage) -> float | None:
    price = price_for(spec)
    if price is None:
        return None
    return (usage.uncached_input * price.input + usage.cache_read * price.cache_read
            + usage.cache_write * price.cache_write) * PER_TOKEN


def uncached_input_cost(spec: str, usage: Usage) -> float | None:
    price = price_for(spec)
    if price is None:
        return None
    return usage.total_input * price.input * PER_TOKEN


def estimate_cost(spec: str, usage: Usage) -> float | None:
    price = price_for(spec)
    if price is None:
        return None
    return (usage.uncached_input * price.input + usage.cache_read * price.cache_read
            + usage.cache_write * price.cache_write + usage.output * price.output) * PER_TOKEN
