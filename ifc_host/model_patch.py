"""The committed model rebuilt in memory from the records a commit changed, instead of re-reading the file.

A commit's model comes from the script's process as IFC-SPF text; model_diff.py finds the records that differ
from the committed model's own serialisation. `InPlace` writes exactly those into the keeper's committed model
itself, and can take them out again from the records they replaced (a refused, held or failed commit), both
checked the same way; `apply_records` writes them into a second parsed copy of the committed model (the
keeper's *shadow*, read from the committed file, only for a run with a rule set). Created entities are
created under their ids, rewritten ones get their new values, deleted ones are removed. Then it
checks the result as strictly as a full parse would be checked (model_diff.check_against_model): every
record it applied must come back, written by IfcOpenShell from the shadow, byte for byte as sent, and the
shadow must hold one entity per record. The text between the records (the header) must be a well-formed
header naming the model's own schema. Anything else raises NotCanonical, and the keeper parses the whole
text as before: this is a shortcut, never a second way to decide what is committed.

Values are read as IfcOpenShell writes them: `$`, `*`, `#id`, `.ENUM.`, `.T.`/`.F.`/`.U.`, integers, reals
(with a `.`), strings (with `''`, `\\\\`, `\\X\\hh`, `\\X2\\...\\X0\\` and `\\X4\\...\\X0\\`), lists and typed
values such as `IFCLABEL('x')`.
"""
from __future__ import annotations

import re
from typing import Any

import ifcopenshell
import ifcopenshell.ifcopenshell_wrapper as wrapper

from ifc_host.model_diff import EntityDiff, NotCanonical

_SPF_TEXT = wrapper.entity_instance.to_string
_RECORD = re.compile(rb"#(\d+)=([A-Z][A-Z0-9_]*)\((.*)\);\Z", re.S)
_TOKEN = re.compile(rb"""
    (?P<ref>\#\d+)
  | (?P<string>'(?:[^']|'')*')
  | (?P<enum>\.[A-Z0-9_]+\.)
  | (?P<real>[+-]?\d+\.\d*(?:E[+-]?\d+)?)
  | (?P<integer>[+-]?\d+)
  | (?P<typed>[A-Z][A-Z0-9_]*\()
  | (?P<open>\()
  | (?P<close>\))
  | (?P<comma>,)
  | (?P<null>\$)
  | (?P<derived>\*)
""", re.X)
_HEADER = re.compile(rb"\AISO-10303-21;\nHEADER;\n(FILE_DESCRIPTION\(.*\);)\n(FILE_NAME\(.*\);)\n"
                     rb"FILE_SCHEMA\(\('([A-Z0-9_]+)'\)\);\nENDSEC;\Z", re.S)
_DERIVED = object()


class _Ref:
    __slots__ = ("id",)

    def __init__(self, entity_id: int) -> None:
        self.id = entity_id


class _Typed:
    __slots__ = ("name", "value")

    def __init__(self, name: str, value: Any) -> None:
        self.name, self.value = name, value


def check_header(header: bytes, schema: str) -> None:
    """NotCanonical unless `header` (the text before DATA;) is a well-formed header of a `schema` model."""
    found = _HEADER.match(header.rstrip(b"\n"))
    if not found:
        raise NotCanonical("the header is not laid out as IfcOpenShell writes one")
    if found.group(3).decode("ascii") != schema:
        raise NotCanonical(f"the header names the schema {found.group(3).decode('ascii')}, not {schema}")
    for line in found.group(1, 2):
        if not all(_text_only(value) for value in _parse_arguments(line[line.index(b"(") + 1:-2])):
            raise NotCanonical(f"a header field that is not text: {line[:80]!r}")


def _text_only(value: Any) -> bool:
    """Header fields hold strings and lists of strings (or `$`), never references or other values."""
    if isinstance(value, tuple):
        return all(_text_only(v) for v in value)
    return value is None or isinstance(value, str)


def apply_records(shadow: ifcopenshell.file, diff: EntityDiff, deleted_inverses: bool = True) -> None:
    """Make `shadow` (a copy of the committed model) the model whose records `diff` describes; NotCanonical
    when it cannot be shown to be exactly that (the shadow is then spoilt: parse the text instead)."""
    _carry_out(shadow, diff, _plan(shadow, diff, deleted_inverses))
    if len(shadow.entity_names()) != diff.records:
        raise NotCanonical(f"{diff.records} records but {len(shadow.entity_names())} entities once applied")


class ModelSpoilt(RuntimeError):
    """The committed model could not be put back as it was: read it again from its file (or its records)."""


class InPlace:
    """The committed model itself made into the model a commit's records describe (`apply`), and put back
    (`revert`, from the records the diff replaced): no second copy of the model is read. Both directions are
    checked as `apply_records` checks a shadow: every record applied comes back byte for byte as written;
    created entities exist and deleted ones are gone, and the records sent number those before, less the
    deleted, plus the created (the committed model holds one entity per record of its own serialisation, so
    the count follows without counting the model; a record sent twice is refused). Everything that needs no change
    (parsing the records, classes, attribute counts, referrers of deleted entities) is checked in the
    constructor, so a commit refused there leaves the model untouched (NotCanonical)."""

    def __init__(self, model: ifcopenshell.file, diff: EntityDiff) -> None:
        if set(diff.old_records) != diff.deleted | diff.differing:
            raise NotCanonical("the records the run replaced are not all known")
        if diff.records != diff.records_before - len(diff.deleted) + len(diff.created):
            # e.g. a record sent twice: the same line again is no difference, but the file would hold it twice
            raise NotCanonical(f"{diff.records} records, but {diff.records_before} before, "
                               f"{len(diff.created)} created and {len(diff.deleted)} deleted")
        self.model, self.diff = model, diff
        self.undo = EntityDiff(created=set(diff.deleted), deleted=set(diff.created), differing=set(diff.differing),
                               records=diff.records_before, records_before=diff.records,
                               new_records=dict(diff.old_records), old_records=dict(diff.new_records))
        self._forward = _plan(model, diff, deleted_inverses=True)
        self.applied = False

    def named_guids(self) -> set[str]:
        """The GlobalIds the records write (a rooted entity's first attribute; any text there is taken)."""
        return {arguments[0] for _, arguments in self._forward.values() if arguments and isinstance(arguments[0], str)}

    def apply(self) -> None:
        """NotCanonical when the records cannot be shown applied exactly (the model is then put back as it
        was; ModelSpoilt if even that fails)."""
        if self.applied:
            return
        try:
            _carry_out(self.model, self.diff, self._forward)
            _check_population(self.model, self.diff)
        except NotCanonical:
            self._put_back()
            raise
        self.applied = True

    def revert(self) -> None:
        """Put the committed model back as it was before `apply` (ModelSpoilt when it cannot be shown)."""
        if self.applied:
            self._put_back()
            self.applied = False

    def _put_back(self) -> None:
        try:
            _carry_out(self.model, self.undo, _plan(self.model, self.undo, deleted_inverses=True))
            _check_population(self.model, self.undo)
        except NotCanonical as exc:
            raise ModelSpoilt(f"the committed model could not be put back: {exc}") from exc


def _check_population(model: ifcopenshell.file, diff: EntityDiff) -> None:
    for entity_id in diff.created:
        if not _exists(model, entity_id):
            raise NotCanonical(f"#{entity_id} was not created")
    for entity_id in diff.deleted:
        if _exists(model, entity_id):
            raise NotCanonical(f"#{entity_id} was not removed")


def _exists(model: ifcopenshell.file, entity_id: int) -> bool:
    try:
        model.by_id(entity_id)
    except RuntimeError:
        return False
    return True


def _plan(model: ifcopenshell.file, diff: EntityDiff, deleted_inverses: bool) -> dict[int, tuple[str, list[Any]]]:
    """The parsed records of `diff`, after the checks that need no change to `model` (NotCanonical)."""
    parsed = {entity_id: _parse_record(entity_id, line) for entity_id, line in diff.new_records.items()}
    touched = diff.differing | diff.deleted
    try:
        if deleted_inverses:
            for entity_id in diff.deleted:
                for referrer in model.get_inverse(model.by_id(entity_id)):
                    if referrer.id() not in touched:
                        raise NotCanonical(f"#{referrer.id()} still refers to the deleted #{entity_id}")
        for entity_id in diff.created:
            if _exists(model, entity_id):
                raise NotCanonical(f"#{entity_id} is created but exists already")
        for entity_id in diff.differing:
            cls, arguments = parsed[entity_id]
            entity = model.by_id(entity_id)
            if entity.is_a().upper() != cls:
                raise NotCanonical(f"#{entity_id} changed class")
            if len(arguments) != len(entity):
                raise NotCanonical(f"#{entity_id} has {len(arguments)} attributes, {cls} has {len(entity)}")
    except NotCanonical:
        raise
    except Exception as exc:  # noqa: BLE001 - not an entity of the model: the text decides, parsed in full
        raise NotCanonical(f"a record could not be applied ({type(exc).__name__}: {exc})") from exc
    return parsed


def _carry_out(model: ifcopenshell.file, diff: EntityDiff, parsed: dict[int, tuple[str, list[Any]]]) -> None:
    try:
        for entity_id in sorted(diff.created):
            model.create_entity(parsed[entity_id][0], id=entity_id)
        for entity_id, (cls, arguments) in parsed.items():
            entity = model.by_id(entity_id)
            if entity.is_a().upper() != cls:
                raise NotCanonical(f"#{entity_id} changed class")
            if len(arguments) != len(entity):
                raise NotCanonical(f"#{entity_id} has {len(arguments)} attributes, {cls} has {len(entity)}")
            for index, value in enumerate(arguments):
                if value is not _DERIVED:
                    entity[index] = _resolve(model, value)
        for entity_id in diff.deleted:
            model.remove(model.by_id(entity_id))
    except NotCanonical:
        raise
    except Exception as exc:  # noqa: BLE001 - IfcOpenShell refused a value: the text decides, parsed in full
        raise NotCanonical(f"a record could not be applied ({type(exc).__name__}: {exc})") from exc
    for entity_id, line in diff.new_records.items():
        if (_SPF_TEXT(model.by_id(entity_id), True) + ";").encode("utf-8") != line:
            raise NotCanonical(f"record #{entity_id} did not come back as sent")


def _resolve(model: ifcopenshell.file, value: Any) -> Any:
    if isinstance(value, _Ref):
        return model.by_id(value.id)
    if isinstance(value, tuple):
        return tuple(_resolve(model, v) for v in value)
    if isinstance(value, _Typed):
        return model.create_entity(value.name, _resolve(model, value.value))
    return value


def _parse_record(entity_id: int, line: bytes) -> tuple[str, list[Any]]:
    found = _RECORD.match(line)
    if not found or int(found.group(1)) != entity_id:
        raise NotCanonical(f"record #{entity_id} is not one entity record")
    return found.group(2).decode("ascii"), _parse_arguments(found.group(3))


def _parse_arguments(text: bytes) -> list[Any]:
    """The values of `text`, the inside of a record's brackets."""
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(text)]
    if sum(len(t) for _, t in tokens) != len(text):
        raise NotCanonical(f"unexpected text in {text[:80]!r}")
    tokens = [("open", b"("), *tokens, ("close", b")")]
    values, position = _parse_value(tokens, 0)
    if position != len(tokens):
        raise NotCanonical(f"unbalanced brackets in {text[:80]!r}")
    return list(values)


def _parse_list(tokens: list[tuple[str | None, bytes]], position: int) -> tuple[list[Any], int]:
    """The comma-separated values from `position` (just after a `(`) up to its `)`, and the position after it."""
    values: list[Any] = []
    if position < len(tokens) and tokens[position][0] == "close":
        return values, position + 1
    while True:
        if position >= len(tokens):
            raise NotCanonical("a list that does not end")
        value, position = _parse_value(tokens, position)
        values.append(value)
        if position >= len(tokens):
            raise NotCanonical("a list that does not end")
        kind = tokens[position][0]
        position += 1
        if kind == "close":
            return values, position
        if kind != "comma":
            raise NotCanonical("values not separated by commas")


def _parse_value(tokens: list[tuple[str | None, bytes]], position: int) -> tuple[Any, int]:
    kind, text = tokens[position]
    position += 1
    if kind == "ref":
        return _Ref(int(text[1:])), position
    if kind == "string":
        return _decode_string(text[1:-1]), position
    if kind == "enum":
        literal = text[1:-1].decode("ascii")
        return {"T": True, "F": False, "U": "UNKNOWN"}.get(literal, literal), position
    if kind == "real":
        return float(text), position
    if kind == "integer":
        return int(text), position
    if kind == "null":
        return None, position
    if kind == "derived":
        return _DERIVED, position
    if kind == "open":
        values, position = _parse_list(tokens, position)
        return tuple(values), position
    if kind == "typed":
        inner, position = _parse_list(tokens, position)
        if len(inner) != 1:
            raise NotCanonical("a typed value that is not one value")
        return _Typed(text[:-1].decode("ascii"), inner[0]), position
    raise NotCanonical(f"unexpected {text!r}")


_ESCAPE = re.compile(rb"''|\\\\|\\X\\([0-9A-F]{2})|\\X2\\((?:[0-9A-F]{4})+)\\X0\\|\\X4\\((?:[0-9A-F]{8})+)\\X0\\|\\")


def _decode_string(raw: bytes) -> str:
    def replace(found: re.Match[bytes]) -> bytes:
        whole = found.group()
        if whole == b"''":
            return b"'"
        if whole == b"\\\\":
            return b"\\"
        if found.group(1):
            return chr(int(found.group(1), 16)).encode("utf-8")
        if found.group(2):
            return bytes.fromhex(found.group(2).decode("ascii")).decode("utf-16-be").encode("utf-8")
        if found.group(3):
            return bytes.fromhex(found.group(3).decode("ascii")).decode("utf-32-be").encode("utf-8")
        raise NotCanonical(f"an escape IfcOpenShell does not write in {raw[:80]!r}")

    try:
        return _ESCAPE.sub(replace, raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotCanonical(f"a string that is not text: {raw[:80]!r}") from exc
