"""Which entities a run created, deleted or rewrote, from the serialised models themselves (IFC-SPF text).

The keeper compares what the script's process sent for commit with the committed model's own serialisation,
record by record (one `#id=...;` line each, as IfcOpenShell writes them): equal lines are untouched
entities, so the comparison costs two splits and two set lookups per line. It rides on the serialisation the
commit makes anyway, and nothing in it comes from the script's process except the bytes being committed.

The bytes are trusted only as far as they are checked: each record that differs must be the one entity the
parsed model holds under its id, written as IfcOpenShell writes it (so no record can hide another entity or
swallow the lines after it), and the parsed model must hold exactly as many entities as there are records.
Bytes that fail a check are not committed as sent: the keeper writes its own serialisation of what it parsed.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import ifcopenshell
import ifcopenshell.ifcopenshell_wrapper as wrapper

DATA_START = b"\nDATA;\n"
DATA_END = b"ENDSEC;"
HINT_MAX_RECORDS = 256  # the most records a script's process names as changed ahead of its model (child.change_hint)
_SPF_TEXT = wrapper.entity_instance.to_string  # (entity, True): the record as the file writer writes it


class NotCanonical(ValueError):
    """The text is not laid out as IfcOpenShell writes a model (the message says where)."""


@dataclass
class EntityDiff:
    created: set[int] = field(default_factory=set)
    deleted: set[int] = field(default_factory=set)
    differing: set[int] = field(default_factory=set)  # in both, with different text
    records: int = 0  # entity records in the new text
    records_before: int = 0  # entity records in the old text (one entity each: the keeper's own serialisation)
    new_records: dict[int, bytes] = field(default_factory=dict)  # the created and differing records
    old_records: dict[int, bytes] = field(default_factory=dict)  # the deleted and differing records, as they were

    @property
    def empty(self) -> bool:
        return not (self.created or self.deleted or self.differing)


def data_section(text: bytes) -> bytes:
    """The records of an IFC-SPF text: everything between `DATA;` and the final `ENDSEC;`."""
    start = text.find(DATA_START)
    end = text.rfind(DATA_END)
    if start < 0 or end < start:
        raise NotCanonical("no DATA section")
    if b"\n#" in text[:start]:
        raise NotCanonical("an entity record before the DATA section")
    if text[end:].split() != [b"ENDSEC;", b"END-ISO-10303-21;"]:
        raise NotCanonical("text after the DATA section")
    return text[start + len(DATA_START):end]


def _record_id(line: bytes) -> int:
    equals = line.find(b"=")
    if not line.startswith(b"#") or equals < 2 or not line.endswith(b";"):
        raise NotCanonical(f"a line that is not one entity record: {line[:80]!r}")
    try:
        return int(line[1:equals])
    except ValueError as exc:
        raise NotCanonical(f"a record without a numeric id: {line[:80]!r}") from exc


def diff_records(before: bytes, after: bytes, in_before: Callable[[int], bool] | None = None,
                 records_before: int | None = None) -> EntityDiff:
    """Entity ids created, deleted and rewritten between two DATA sections (as data_section returns them).

    `in_before(id)`: whether the model `before` was written from has that entity. With it, a run that
    deleted nothing is compared line by line in place (blocks of equal lines at C speed) instead of through
    two sets of every line: each line either equals the one at its position, or is the same entity rewritten,
    or, after the last of them, an entity that did not exist. Anything else takes the general way.
    Only the lines between the texts' common first and last lines are split and compared (_diff_trimmed);
    `records_before`: record_count(before), when the caller counted it ahead (e.g. while the model to compare
    was being serialised)."""
    if in_before is not None:
        diff = _diff_trimmed(before, after, in_before, record_count(before) if records_before is None else records_before)
        if diff is not None:
            return diff
    old_lines = _lines(before)
    new_lines = _lines(after)
    old_set = set(old_lines)
    new_set = set(new_lines)
    old_records = {_record_id(line): line for line in old_lines if line not in new_set}
    gone = set(old_records)
    came: dict[int, bytes] = {}
    for line in new_lines:
        if line not in old_set:
            entity_id = _record_id(line)
            if entity_id in came:
                raise NotCanonical("two records with the same id")
            came[entity_id] = line
    diff = EntityDiff(records=len(new_lines), records_before=len(old_lines), new_records=came, old_records=old_records)
    diff.differing = gone & came.keys()
    diff.created = set(came) - gone
    diff.deleted = gone - came.keys()
    return diff


def _lines(text: bytes) -> list[bytes]:
    """The records of a DATA section (or of a run of its whole lines), one line each."""
    lines = text.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    return lines


def record_count(text: bytes) -> int:
    """How many records (lines) a DATA section holds, as diff_records counts them, without splitting it."""
    return text.count(b"\n") + (1 if text and not text.endswith(b"\n") else 0)


def _diff_trimmed(before: bytes, after: bytes, in_before: Callable[[int], bool],
                  records_before: int) -> EntityDiff | None:
    """_diff_in_place of the whole texts, worked out on the lines between their common first and last lines
    (found by comparing bytes, at C speed): a commit changes a few records of a big model, and splitting both
    texts into all their lines costs more than the rest of the comparison. Equal leading lines stand at the
    same positions in both texts; so do equal trailing lines when both have as many lines between them
    (otherwise everything after the leading lines is compared, as _diff_in_place does). None where
    _diff_in_place of the whole texts is None."""
    start = before.rfind(b"\n", 0, _common_prefix(before, after)) + 1  # where the first line that differs starts
    common_tail = _common_suffix(before, after, min(len(before), len(after)) - start)
    newline = before.find(b"\n", len(before) - common_tail)  # inside the common tail: a line ends here in both
    tail = len(before) - (newline + 1) if newline >= 0 else 0  # the equal trailing lines, in bytes
    old_middle = _lines(before[start:len(before) - tail])
    new_middle = _lines(after[start:len(after) - tail])
    if len(old_middle) == len(new_middle):
        diff = _diff_in_place(old_middle, new_middle, in_before)
        if diff is not None:
            diff.records = diff.records_before = records_before
        return diff
    old_rest = _lines(before[start:])
    new_rest = _lines(after[start:])
    diff = _diff_in_place(old_rest, new_rest, in_before)
    if diff is not None:
        diff.records = records_before - len(old_rest) + len(new_rest)
        diff.records_before = records_before
    return diff


_SCAN_BYTES = 1 << 16


def _common_prefix(first: bytes, second: bytes) -> int:
    """How many leading bytes the two have in common."""
    limit = min(len(first), len(second))
    view = memoryview(second)
    done, step = 0, _SCAN_BYTES
    while done < limit:
        end = min(done + step, limit)
        if first.startswith(view[done:end], done):
            done = end
        elif step == 1:
            return done
        else:
            step //= 2
    return limit


def _common_suffix(first: bytes, second: bytes, limit: int) -> int:
    """How many trailing bytes, at most `limit`, the two have in common."""
    view = memoryview(second)
    done, step = 0, _SCAN_BYTES
    while done < limit:
        end = min(done + step, limit)
        if first.endswith(view[len(second) - end:len(second) - done], 0, len(first) - done):
            done = end
        elif step == 1:
            return done
        else:
            step //= 2
    return max(limit, 0)


_BLOCK = 512


def _diff_in_place(old_lines: list[bytes], new_lines: list[bytes], in_before: Callable[[int], bool]) -> EntityDiff | None:
    """The diff of a run that deleted nothing (None otherwise). The ids of `old_lines` are unique (the keeper's
    own serialisation), so are those of the lines that match them position by position; the lines past the end
    of `old_lines` must be entities `before` did not have, each once."""
    common = len(old_lines)
    if len(new_lines) < common:
        return None
    diff = EntityDiff(records=len(new_lines))
    for start in range(0, common, _BLOCK):
        end = min(start + _BLOCK, common)
        if old_lines[start:end] == new_lines[start:end]:
            continue
        for index in range(start, end):
            old, new = old_lines[index], new_lines[index]
            if old != new:
                entity_id = _record_id(new)
                if _record_id(old) != entity_id:
                    return None  # shifted: something was deleted (or reordered)
                diff.differing.add(entity_id)
                diff.new_records[entity_id] = new
                diff.old_records[entity_id] = old
    for line in new_lines[common:]:
        entity_id = _record_id(line)
        if entity_id in diff.new_records or in_before(entity_id):
            return None
        diff.created.add(entity_id)
        diff.new_records[entity_id] = line
    return diff


def check_against_model(diff: EntityDiff, model: ifcopenshell.file) -> None:
    """NotCanonical unless every created or rewritten record is exactly its entity in the parsed `model`
    and the model holds one entity per record."""
    if len(model.entity_names()) != diff.records:
        raise NotCanonical(f"{diff.records} records but {len(model.entity_names())} entities after parsing")
    for entity_id, line in diff.new_records.items():
        try:
            entity = model.by_id(entity_id)
        except RuntimeError as exc:
            raise NotCanonical(f"record #{entity_id} is not an entity of the parsed model") from exc
        if (_SPF_TEXT(entity, True) + ";").encode("utf-8") != line:
            raise NotCanonical(f"record #{entity_id} is not written as IfcOpenShell writes it")
    for entity_id in diff.deleted:
        try:
            model.by_id(entity_id)
        except RuntimeError:
            continue
        raise NotCanonical(f"#{entity_id} has no record but is in the parsed model")
