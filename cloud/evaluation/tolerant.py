"""A tolerant comparison of a free-text answer with an expected one (ifc-bench style question sets).

- a number, with or without a unit: the answer must give the same quantity (a count exactly, a measure within
  2%; units of length, area and volume are converted: mm, cm, m, ft, in; "m2", "m²", "sq m", "square metres");
- yes / no: the answer must start with, or clearly say, the same;
- a list ("a, b and c", "a; b"): every item must appear in the answer;
- anything else: the expected text must appear in the answer, ignoring case, spaces and punctuation.
"""
from __future__ import annotations

import re

RELATIVE = 0.02
LENGTH = {"mm": 0.001, "millimetre": 0.001, "millimeter": 0.001, "cm": 0.01, "m": 1.0, "metre": 1.0,
          "meter": 1.0, "km": 1000.0, "ft": 0.3048, "foot": 0.3048, "feet": 0.3048, "in": 0.0254, "inch": 0.0254}
POWER = {"2": 2, "²": 2, "3": 3, "³": 3}
QUANTITY = re.compile(
    r"(?<![\w.])(?P<num>[-+]?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?)\s*"
    r"(?P<sq>sq\.?\s*|square\s+|cubic\s+|cu\.?\s*)?"
    r"(?P<unit>millimet(?:re|er)s?|met(?:re|er)s?|feet|foot|inch(?:es)?|mm|cm|km|ft|in|m)?"
    r"(?P<pow>[23²³])?(?![A-Za-z])", re.IGNORECASE)
YES, NO = {"yes", "true", "y"}, {"no", "false", "n", "none"}


def _unit_power(match: re.Match[str]) -> tuple[float, int] | None:
    unit = (match.group("unit") or "").lower()
    if not unit:
        return None
    base = LENGTH.get(unit.rstrip("s")) or LENGTH.get(unit) or LENGTH.get(unit.replace("es", ""))
    if base is None:
        return None
    sq = (match.group("sq") or "").lower()
    power = POWER.get(match.group("pow") or "", 3 if sq.startswith(("cu", "cubic")) else 2 if sq else 1)
    return base, power


def quantities(text: str) -> list[tuple[float, tuple[float, int] | None]]:
    """Every number in `text` with its unit (factor to metres, power) when one follows it."""
    return [(float(m.group("num").replace(",", "")), _unit_power(m)) for m in QUANTITY.finditer(text)]


def _same_quantity(expected: tuple[float, tuple[float, int] | None], found: tuple[float, tuple[float, int] | None]
                   ) -> bool:
    value, unit = expected
    other, other_unit = found
    if unit and other_unit:
        if unit[1] != other_unit[1]:
            return False
        value, other = value * unit[0] ** unit[1], other * other_unit[0] ** other_unit[1]
    exact = not unit and value == int(value)  # a count is exact; a measured quantity within 2%
    slack = 1e-9 if exact else abs(value) * RELATIVE
    return abs(value - other) <= slack


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w²³]+", " ", text.lower()).split())


def _says(said: str, text: str) -> bool:
    return f" {_norm(text)} " in f" {said} "


def _items(expected: str) -> list[str]:
    parts = re.split(r"\s*(?:,|;|\band\b|\n)\s*", expected.strip().strip("[]"))
    return [p.strip(" '\"") for p in parts if p.strip(" '\"")]


def matches(expected: str, answer: str) -> tuple[bool, str]:
    """(ok, detail) for the answer against the expected text."""
    wanted = expected.strip()
    if not wanted:
        return False, "the expected answer is empty"
    said = _norm(answer)
    if _norm(wanted) in YES | NO:
        yes = _norm(wanted) in YES
        first = said.split(" ", 1)[0] if said else ""
        ok = first in (YES if yes else NO) or (not (set(said.split()) & (NO if yes else YES))
                                               and bool(set(said.split()) & (YES if yes else NO)))
        return ok, "" if ok else f"expected {'yes' if yes else 'no'}"
    numbers = quantities(wanted)
    if len(numbers) == 1 and re.fullmatch(r"[-+\d.,\s]*\S*", wanted) and len(wanted.split()) <= 3:
        found = quantities(answer)
        ok = any(_same_quantity(numbers[0], q) for q in found)
        return ok, "" if ok else f"expected {wanted}; the answer gives {[q for q, _ in found][:8] or 'no number'}"
    items = _items(wanted)
    if len(items) > 1:
        missing = [i for i in items if not _says(said, i) and not (quantities(i) and any(
            _same_quantity(quantities(i)[0], q) for q in quantities(answer)))]
        return not missing, "" if not missing else f"missing from the answer: {', '.join(missing)}"
    ok = _says(said, wanted)
    return ok, "" if ok else f"expected the answer to say {wanted!r}"
