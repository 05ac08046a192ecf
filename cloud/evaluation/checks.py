"""Helpers for checker authors (`from cloud.evaluation import checks`): what changed between two IFC files,
and what an answer says. Every helper is strict by default: a checker should fail on anything unexpected."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ifc_host.spatial import storey_of as storey_of  # the storey an element stands on (ifc_host/spatial.py)

NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?")  # units may follow: "3.5m"


@dataclass
class Diff:
    added: list[Any]  # entities of `after` absent from `before`
    removed: list[Any]  # entities of `before` absent from `after`
    changed: list[tuple[Any, Any]]  # (before, after) pairs with the same id whose written form differs

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def describe(self, limit: int = 6) -> str:
        parts = []
        for label, items in (("added", self.added), ("removed", self.removed),
                             ("changed", [b for b, _ in self.changed])):
            if items:
                shown = ", ".join(f"#{e.id()} {e.is_a()}" for e in items[:limit])
                more = f" and {len(items) - limit} more" if len(items) > limit else ""
                parts.append(f"{len(items)} {label} ({shown}{more})")
        return "; ".join(parts) or "no change"


def diff(before: Any, after: Any) -> Diff:
    """Every entity compared by id and written form (its STEP line: type, every attribute, every reference)."""
    old = {e.id(): e for e in before}
    new = {e.id(): e for e in after}
    changed = [(old[i], new[i]) for i in old.keys() & new.keys() if str(old[i]) != str(new[i])]
    return Diff(added=sorted((new[i] for i in new.keys() - old.keys()), key=lambda e: e.id()),
                removed=sorted((old[i] for i in old.keys() - new.keys()), key=lambda e: e.id()),
                changed=sorted(changed, key=lambda pair: pair[0].id()))


def unchanged(before: Any, after: Any) -> tuple[bool, str]:
    """(True, "") when the two files hold exactly the same entities; otherwise what differs."""
    found = diff(before, after)
    return found.empty, "" if found.empty else f"the model changed: {found.describe()}"


def attribute_changes(pair: tuple[Any, Any]) -> dict[str, tuple[Any, Any]]:
    """For a changed (before, after) pair: the attributes whose values differ, by name."""
    b, a = pair
    if b.is_a() != a.is_a():
        return {"(class)": (b.is_a(), a.is_a())}
    out = {}
    for index in range(len(b)):
        old, new = _plain(b[index]), _plain(a[index])
        if old != new:
            out[b.attribute_name(index)] = (b[index], a[index])
    return out


def _plain(value: Any) -> Any:
    if hasattr(value, "id") and callable(value.id):
        return ("#", value.id()) if value.id() else ("v", value.is_a(), _plain(value.wrappedValue))
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    return value


def only_changed(before: Any, after: Any, allowed: Callable[[Any, Any], bool],
                 allow_added: Callable[[Any], bool] = lambda e: False,
                 allow_removed: Callable[[Any], bool] = lambda e: False) -> tuple[bool, str]:
    """Every difference must be allowed: `allowed(old, new)` for changed entities, `allow_added(new)`,
    `allow_removed(old)`. Returns (ok, what was not allowed)."""
    found = diff(before, after)
    bad = [f"#{b.id()} {b.is_a()} changed ({', '.join(attribute_changes((b, a)))})"
           for b, a in found.changed if not allowed(b, a)]
    bad += [f"#{e.id()} {e.is_a()} added" for e in found.added if not allow_added(e)]
    bad += [f"#{e.id()} {e.is_a()} removed" for e in found.removed if not allow_removed(e)]
    if bad:
        more = f" (and {len(bad) - 8} more)" if len(bad) > 8 else ""
        return False, "unexpected changes: " + "; ".join(bad[:8]) + more
    return True, ""


def numbers(answer: str) -> list[float]:
    """Every number written in the answer ("1,234.5" is one number)."""
    return [float(m.group(0).replace(",", "")) for m in NUMBER.finditer(answer)]


def has_number(answer: str, expected: float, tolerance: float = 0.0) -> bool:
    """The answer writes `expected` (within `tolerance`, absolute, plus 0.5% relative for non-integers)."""
    slack = tolerance + (abs(expected) * 0.005 if expected != int(expected) else 0.0)
    return any(abs(n - expected) <= slack + 1e-9 for n in numbers(answer))


def _tokens(text: str) -> str:
    return " " + " ".join(re.sub(r"[^a-z0-9_\-]+", " ", text.lower()).split()) + " "


def words(answer: str) -> set[str]:
    return set(_tokens(answer).split())


def mentions(answer: str, item: str) -> bool:
    """The item ("D101", "Level 2") appears in the answer as whole tokens, ignoring case and punctuation."""
    return _tokens(item) in _tokens(answer)


def mentions_all(answer: str, items: Iterable[str]) -> tuple[bool, list[str]]:
    """(ok, the items the answer does not mention)."""
    missing = [i for i in items if not mentions(answer, i)]
    return not missing, missing


def mentions_none(answer: str, items: Iterable[str]) -> list[str]:
    """The items the answer mentions (a checker wants this empty)."""
    return [i for i in items if mentions(answer, i)]


def pset_value(element: Any, pset: str, prop: str) -> Any:
    import ifcopenshell.util.element

    return (ifcopenshell.util.element.get_psets(element).get(pset) or {}).get(prop)
