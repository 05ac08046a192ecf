"""The report of an automation, worked out in the keeper from the model the script's process wrote.

The script runs in a process it controls entirely (it can switch the change recorder off, patch the host's
functions, write to its pipes), so nothing that process reports decides what the person is told. The
keeper compares the written model with the committed one entity by entity (model_diff.py), maps the result
to elements (changes.changes_between), and runs before → after, validation, the IDS check and the cloud's
epilogue on that set, against the model it parsed itself: exactly what a commit would write. What the
script's process reported (its recorder's element sets) is only compared: when it differs, the report says so.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ifcopenshell
import ifcopenshell.ifcopenshell_wrapper as wrapper

from ifc_host.change_details import KIND_WORDS, describe_changes
from ifc_host.changes import (
    ChangeRecorder,
    ChangeSet,
    changes_after,
    changes_between,
    read_before,
    snapshot_of,
)
from ifc_host.ids_check import IdsRun, IdsState
from ifc_host.ids_reader import IdsProblem, parsed_ids
from ifc_host.model_diff import (
    DATA_START,
    EntityDiff,
    NotCanonical,
    check_against_model,
    data_section,
    diff_records,
)
from ifc_host.model_file import BadModelError, open_checked
from ifc_host.model_patch import InPlace, ModelSpoilt, apply_records, check_header
from ifc_host.rules_after import apply_rules
from ifc_host.script import STDOUT_CAP_BYTES, CappedOutput, run_code
from ifc_host.spatial import storey_ids, storey_labels
from ifc_host.validation import validate_run

EPILOGUE_FILENAME = "<epilogue>"
_SPF_TEXT = wrapper.entity_instance.to_string  # (entity, True): the record as the file writer writes it


@dataclass
class Prepared:
    """A commit worked out but not yet renamed into place."""

    result: dict[str, Any]
    data: bytes | None = None  # what to write; None when the run changed nothing (nothing is written)
    records: bytes | None = None  # its DATA section: the next commit's baseline
    adopted: ifcopenshell.file | None = None  # `data` parsed: the committed model once renamed into place
    path: Path | None = None  # where `data` was written to be parsed
    ids_after: tuple[str, IdsState] | None = None
    rebuilt: bool = False  # `adopted` is rebuilt from the changed records, not a parse of `data`
    patch: CommittedPatch | None = None  # `adopted` is the committed model itself, patched in place
    entities: int | None = None  # how many entities `adopted` holds, when known without counting them
    ahead: bool = False  # worked out while the model was being serialised (ReportAhead), then found to be it

    @property
    def unchanged(self) -> bool:
        return self.data is None


class CommittedPatch:
    """The committed model patched in place into the model a prepared commit writes (model_patch.InPlace):
    `revert` puts it back as it was (a refused, held or failed commit), `apply` patches it again (keeping a
    held automation). ModelSpoilt when either cannot be shown exact: the keeper then reads its model again."""

    def __init__(self, in_place: InPlace) -> None:
        self.in_place = in_place
        self.warnings = list(getattr(in_place.model, "_nexus_open_warnings", None) or [])

    @property
    def applied(self) -> bool:
        return self.in_place.applied

    def apply(self) -> None:
        self.in_place.apply()
        self.in_place.model._nexus_open_warnings = []  # the model of the file the commit writes, which reads cleanly

    def revert(self) -> None:
        self.in_place.revert()
        self.in_place.model._nexus_open_warnings = list(self.warnings)


class GuidsBefore:
    """The one thing validation asks of the model before the run besides the change set (which entity held a
    GlobalId, validation._Checker._holder_before), read beforehand for the GlobalIds the run's records name."""

    def __init__(self, before: ifcopenshell.file, guids: set[str]) -> None:
        self._holders: dict[str, int] = {}
        for guid in guids:
            try:
                holder = before.by_guid(guid)
            except RuntimeError:
                continue
            if holder is not None:
                self._holders[guid] = holder.id()

    def by_guid(self, guid: str) -> _Holder:
        if guid not in self._holders:
            raise RuntimeError(f"no entity had the GlobalId {guid} before the run")
        return _Holder(self._holders[guid])


class _Holder:
    def __init__(self, entity_id: int) -> None:
        self._id = entity_id

    def id(self) -> int:
        return self._id


class IdsStates:
    """IDS results of the committed model, per IDS text: the state after one commit is the next run's
    state before, so an unchanged model is never checked twice."""

    def __init__(self) -> None:
        self._model: ifcopenshell.file | None = None
        self._states: dict[str, IdsState] = {}

    def get(self, model: ifcopenshell.file, text: str) -> IdsState | None:
        return self._states.get(text) if model is self._model else None

    def forget(self) -> None:
        """The committed model was changed in place: nothing known of it holds any more."""
        self._model, self._states = None, {}

    def put(self, model: ifcopenshell.file, text: str, state: IdsState) -> None:
        if model is not self._model:
            self._model, self._states = model, {}
        if len(self._states) >= 4:
            self._states.clear()
        self._states[text] = state


def prepare(committed: ifcopenshell.file, baseline: bytes, data: bytes, reported: dict[str, Any],
            job: dict[str, Any], write: Callable[[bytes], Path], workdir: Path,
            ids_states: IdsStates, shadow: ifcopenshell.file | None = None,
            in_place: bool = False, baseline_records: int | None = None,
            ahead: ReportAhead | None = None) -> Prepared | str:
    """The trusted result of a run whose process sent `data`, or why it cannot be committed (a message).
    `in_place`: the model `data` describes may be made of `committed` itself, patched with the records that
    changed (model_patch.InPlace; the Prepared's `patch` puts it back): nothing is parsed in full. Otherwise,
    or when that cannot be shown exact, `shadow` (a second copy of the committed model, parsed from its
    file) is rebuilt the same way, or else all of `data` is parsed. `baseline_records`: model_diff.record_count
    of `baseline`, when the caller counted it ahead. `ahead`: the commit worked out ahead on a guess of the
    records that changed (ReportAhead), taken if the model sent has exactly those."""
    result = {**reported, "failures": list(reported.get("failures") or [])}
    recorded = reported.get("changes") or {"added": [], "modified": [], "deleted": []}
    try:
        records = data_section(data)
        diff = diff_records(baseline, records, functools.partial(_has_entity, committed), baseline_records)
    except NotCanonical:
        records, diff = None, None
    if ahead is not None:
        taken = ahead.take(diff, data, records, write)
        if taken is not None:
            return taken
    if diff is not None and diff.empty:
        changes = ChangeSet()
        _fill(committed, changes, result, recorded, job, workdir, ids_states, committed_model=True)
        return Prepared(result)
    path = write(data)
    if in_place and diff is not None and records is not None:
        patched = _prepare_in_place(committed, data, records, diff, path, result, recorded, job, workdir, ids_states)
        if patched is not None:
            return patched
    unreadable = None
    adopted = _rebuilt(shadow, committed, data, diff)
    try:
        if adopted is None:
            adopted = open_checked(path)
    except BadModelError as exc:
        # Never committed; still compared and validated, so the person learns what the script broke.
        unreadable = f"the written model did not read back: {exc}"
        try:
            adopted = ifcopenshell.open(str(path))
        except Exception:  # noqa: BLE001 - not even a lenient parse: nothing to compare
            return unreadable
    try:
        if diff is None or records is None:
            raise NotCanonical("not laid out as IfcOpenShell writes a model")
        if adopted is not shadow:  # a rebuilt shadow was checked record by record as it was rebuilt
            check_against_model(diff, adopted)
    except NotCanonical as exc:
        # Commit the keeper's own serialisation of what it parsed, and compare that.
        data = adopted.to_string().encode("utf-8")
        records = data_section(data)
        diff = diff_records(baseline, records)
        path = write(data)
        adopted = open_checked(path)
        result["failures"].append({"severity": "warning", "message": (
            f"the model the script's process sent was not written the way IfcOpenShell writes one ({exc}); the "
            "host saved its own serialisation of it instead")})
    changes = changes_between(committed, adopted, diff.created, diff.deleted, diff.differing)
    ids_after = _fill(adopted, changes, result, recorded, job, workdir, ids_states, committed_model=False,
                      before_model=committed)
    if unreadable is not None:
        if result.get("ok"):
            result["ok"] = False
            result["error"] = {"type": "CommitFailed", "message": unreadable + "; the model is unchanged",
                               "line": None, "traceback": ""}
        return Prepared(result, data=data, records=records, adopted=adopted, path=path)
    if changes.empty and not (diff.created or diff.deleted) and not _anything_differs(committed, adopted, diff.differing):
        return Prepared(result)  # only the text differed (values written back unchanged): nothing to write
    return Prepared(result, data=data, records=records, adopted=adopted, path=path, ids_after=ids_after,
                    rebuilt=adopted is shadow)


def _prepare_in_place(committed: ifcopenshell.file, data: bytes, records: bytes, diff: EntityDiff, path: Path,
                      result: dict[str, Any], recorded: dict[str, Any], job: dict[str, Any], workdir: Path,
                      ids_states: IdsStates) -> Prepared | None:
    """`prepare` with `committed` patched in place into the model `data` describes (_patch_and_report). None,
    with the model untouched, when the records cannot be applied exactly or the run has a rule set (its checks
    read the whole model before and after at once): then `prepare` goes the other way."""
    if job.get("rules"):
        return None
    try:
        check_header(data[:data.find(DATA_START) + 1], committed.schema_identifier)
    except NotCanonical:
        return None
    patched = _patch_and_report(committed, diff, result, recorded, job, workdir, ids_states)
    if patched is None or isinstance(patched, Prepared):
        return patched
    patch, ids_after = patched
    return Prepared(result, data=data, records=records, adopted=committed, path=path, ids_after=ids_after,
                    rebuilt=True, patch=patch, entities=diff.records)


def _patch_and_report(committed: ifcopenshell.file, diff: EntityDiff, result: dict[str, Any],
                      recorded: dict[str, Any], job: dict[str, Any], workdir: Path, ids_states: IdsStates,
                      ) -> tuple[CommittedPatch, tuple[str, IdsState] | None] | Prepared | None:
    """`committed` patched in place with `diff`'s records and the report worked out on it (into `result`): what
    the report needs of the model before the run is read first (the change set's before side, GlobalId
    holders, the IDS state), then the records are applied and the rest is worked out on the patched model.
    The patch and the IDS state after it; or, for a refused run or one whose rewritten records changed no
    value, the Prepared reply with the model put back; None, the model untouched, when the records cannot be
    applied exactly."""
    try:
        patch = CommittedPatch(InPlace(committed, diff))
    except NotCanonical:
        return None
    before = read_before(committed, diff.deleted, diff.differing)
    guids = GuidsBefore(committed, patch.in_place.named_guids())
    ids_run = _start_ids(committed, job, ids_states)
    try:
        patch.apply()
    except NotCanonical:
        return None  # put back as it was (ModelSpoilt, raised to the keeper, if not)
    ids_states.forget()
    try:
        changes = changes_after(before, committed, diff.created, diff.deleted, diff.differing)
        ids_after = _fill(committed, changes, result, recorded, job, workdir, ids_states, committed_model=False,
                          before_model=guids, ids_run=ids_run)  # type: ignore[arg-type]
    except Exception:
        patch.revert()  # whatever failed, the committed model is not left patched
        raise
    if (result.get("error") or {}).get("type") == "EpilogueModifiedModel":
        raise ModelSpoilt("the change-report script modified the model")  # more than the records can put back
    if not result.get("ok"):
        patch.revert()
        return Prepared(result)
    if changes.empty and not (diff.created or diff.deleted) and \
            not any(before.snapshots[i] != snapshot_of(committed.by_id(i)) for i in diff.differing):
        patch.revert()
        return Prepared(result)  # only the text differed (values written back unchanged): nothing to write
    return patch, ids_after


class ReportAhead:
    """The commit worked out ahead, while the script's process is still serialising the model it commits: on
    the records that process says the run changed (its recorder's, read from its model: only a guess, from a
    process the script controls), the committed model is patched in place and the report worked out, as
    `prepare` would. `prepare` takes it only if the diff of the model that then comes is exactly the guessed
    one (same entities created, deleted and rewritten, same records before and after, same counts): the
    report is worked out from nothing else, so it is the one `prepare` would have worked out. Otherwise it
    is undone and `prepare` works everything out from the model sent."""

    def __init__(self, committed: ifcopenshell.file, baseline_records: int, changed: dict[int, bytes],
                 deleted: set[int], reported: dict[str, Any], job: dict[str, Any], workdir: Path,
                 ids_states: IdsStates) -> None:
        self.committed = committed
        self.diff = _guessed_diff(committed, baseline_records, changed, deleted)
        self.result = {**reported, "failures": list(reported.get("failures") or [])}
        self.outcome: tuple[CommittedPatch, tuple[str, IdsState] | None] | Prepared | None = None
        if self.diff is not None and not self.diff.empty and not job.get("rules"):
            recorded = reported.get("changes") or {"added": [], "modified": [], "deleted": []}
            self.outcome = _patch_and_report(committed, self.diff, self.result, recorded, job, workdir, ids_states)

    def take(self, diff: EntityDiff | None, data: bytes, records: bytes | None,
             write: Callable[[bytes], Path]) -> Prepared | None:
        """The prepared commit if `diff` (of the model sent) is the one guessed, else None with the committed
        model put back as it was (ModelSpoilt if that cannot be shown)."""
        outcome, self.outcome = self.outcome, None
        if outcome is None:
            return None
        if diff is None or records is None or not _same_diff(diff, self.diff) or not _header_fits(data, self.committed):
            if not isinstance(outcome, Prepared):
                outcome[0].revert()
            return None
        if isinstance(outcome, Prepared):
            return outcome  # refused, or changed no value: nothing is written
        patch, ids_after = outcome
        return Prepared(self.result, data=data, records=records, adopted=self.committed, path=write(data),
                        ids_after=ids_after, rebuilt=True, patch=patch, entities=diff.records, ahead=True)

    def drop(self) -> None:
        """Not taken (the model did not come): the committed model put back if it was patched."""
        outcome, self.outcome = self.outcome, None
        if outcome is not None and not isinstance(outcome, Prepared):
            outcome[0].revert()


def _guessed_diff(committed: ifcopenshell.file, baseline_records: int, changed: dict[int, bytes],
                  deleted: set[int]) -> EntityDiff | None:
    """The diff the model would have if it differs from the committed one in `changed` records (as written,
    created where the committed model has no such entity) and `deleted` entities only; None if it cannot."""
    diff = EntityDiff(records_before=baseline_records)
    for entity_id, line in changed.items():
        if entity_id in deleted:
            return None
        if not _has_entity(committed, entity_id):
            diff.created.add(entity_id)
            diff.new_records[entity_id] = line
            continue
        old = (_SPF_TEXT(committed.by_id(entity_id), True) + ";").encode("utf-8")
        if old != line:
            diff.differing.add(entity_id)
            diff.new_records[entity_id] = line
            diff.old_records[entity_id] = old
    for entity_id in deleted:
        if not _has_entity(committed, entity_id):
            return None
        diff.deleted.add(entity_id)
        diff.old_records[entity_id] = (_SPF_TEXT(committed.by_id(entity_id), True) + ";").encode("utf-8")
    diff.records = baseline_records - len(diff.deleted) + len(diff.created)
    return diff


def _same_diff(found: EntityDiff, guessed: EntityDiff | None) -> bool:
    return guessed is not None and (
        found.created, found.deleted, found.differing, found.records, found.records_before, found.new_records,
        found.old_records) == (guessed.created, guessed.deleted, guessed.differing, guessed.records,
                               guessed.records_before, guessed.new_records, guessed.old_records)


def _header_fits(data: bytes, committed: ifcopenshell.file) -> bool:
    try:
        check_header(data[:data.find(DATA_START) + 1], committed.schema_identifier)
    except NotCanonical:
        return False
    return True


def _has_entity(model: ifcopenshell.file, entity_id: int) -> bool:
    try:
        model.by_id(entity_id)
    except RuntimeError:
        return False
    return True


def _rebuilt(shadow: ifcopenshell.file | None, committed: ifcopenshell.file, data: bytes,
             diff: EntityDiff | None) -> ifcopenshell.file | None:
    """The shadow made into the model `data` describes, or None (then `data` is parsed in full)."""
    if shadow is None or diff is None:
        return None
    try:
        check_header(data[:data.find(DATA_START) + 1], committed.schema_identifier)
        apply_records(shadow, diff)
    except NotCanonical:
        return None
    shadow._nexus_open_warnings = []  # it is now the model of the file the commit writes, which reads cleanly
    return shadow


def _anything_differs(before: ifcopenshell.file, after: ifcopenshell.file, differing: set[int]) -> bool:
    from ifc_host.changes import snapshot_of

    return any(snapshot_of(before.by_id(i)) != snapshot_of(after.by_id(i)) for i in differing)


def _fill(model: ifcopenshell.file, changes: ChangeSet, result: dict[str, Any], recorded: dict[str, Any],
          job: dict[str, Any], workdir: Path, ids_states: IdsStates, committed_model: bool,
          before_model: ifcopenshell.file | None = None, ids_run: IdsRun | None = None) -> tuple[str, IdsState] | None:
    """Changes, before → after, validation, IDS and the epilogue's report of `changes` on `model`. `ids_run`:
    the IDS check already started on the model before the run (then `before_model` only answers by_guid)."""
    result["changes"] = changes.as_contract()
    result["geometry_changed"] = list(changes.geometry)
    changes.details = result["change_details"] = describe_changes(model, changes)
    _compare_with_recorded(changes, recorded, result)
    validate_run(model, changes, job.get("validation"), result, before_model)
    if ids_run is not None:
        ids_after = _finish_ids(ids_run, model, job, result, committed_model)
    else:
        ids_after = _check_ids(before_model or model, model, job, result, ids_states, committed_model)
    apply_rules(model if ids_run is not None else before_model or model, model, changes, job, result,
                job.get("model_name") or "model.ifc", same_model=committed_model)
    if job.get("epilogue_code") and result["ok"]:
        run_epilogue(model, job["epilogue_code"], changes, workdir, result)
    return ids_after


def _compare_with_recorded(changes: ChangeSet, recorded: dict[str, Any], result: dict[str, Any]) -> None:
    """Say so when the recorder in the script's process saw something else than the written model shows:
    the script worked around it (a value written back unchanged is no difference: it changed nothing)."""
    added, deleted = set(recorded.get("added") or []), set(recorded.get("deleted") or [])
    modified = set(recorded.get("modified") or [])
    missed = {"added": len(set(changes.added) - added), "modified": len(set(changes.modified) - modified),
              "deleted": len(set(changes.deleted) - deleted)}
    claimed = {"added": len(added - set(changes.added)), "deleted": len(deleted - set(changes.deleted))}
    if not any(missed.values()) and not any(claimed.values()):
        return
    said = f"{len(added)} added, {len(modified)} modified, {len(deleted)} deleted"
    found = f"{len(changes.added)} added, {len(changes.modified)} modified, {len(changes.deleted)} deleted"
    message = (f"the change record kept while the script ran ({said}) does not match the model it wrote ({found}); "
               "this report is taken from the written model. The script bypassed the host's change recording "
               "(for example by replacing model.transaction)")
    result["failures"].append({"severity": "warning", "message": message})
    result["change_details"]["recorded"] = {"added": len(added), "modified": len(modified), "deleted": len(deleted)}


def _check_ids(before: ifcopenshell.file, after: ifcopenshell.file, job: dict[str, Any], result: dict[str, Any],
               states: IdsStates, committed_model: bool) -> tuple[str, IdsState] | None:
    run = _start_ids(before, job, states)
    return None if run is None else _finish_ids(run, after, job, result, committed_model)


def _start_ids(before: ifcopenshell.file, job: dict[str, Any], states: IdsStates) -> IdsRun | None:
    """The run's IDS check started on the model before it (None: no IDS to check)."""
    text = job.get("ids")
    if not text or job.get("mode") != "automate":
        return None
    run = IdsRun(text)
    known = states.get(before, text)
    run.start(before, known)
    if known is None and run.before is not None:
        states.put(before, text, run.before)
    return run


def _finish_ids(run: IdsRun, after: ifcopenshell.file, job: dict[str, Any], result: dict[str, Any],
                committed_model: bool) -> tuple[str, IdsState] | None:
    after_state = run.finish(after, job.get("validation"), result, same_model=committed_model)
    return (job["ids"], after_state) if after_state is not None else None


def warm_ids(text: str) -> None:
    try:
        parsed_ids(text)
    except IdsProblem:
        pass  # reported with the result


def run_epilogue(model: ifcopenshell.file, code: str, changes: ChangeSet, workdir: Path,
                 result: dict[str, Any]) -> None:
    """The cloud's change-report script, read-only, against the model the commit writes."""
    path = workdir / "epilogue-output.txt"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    output = CappedOutput(fd, STDOUT_CAP_BYTES)
    guard = ChangeRecorder(model)
    saved = model.transaction
    model.transaction = guard
    try:  # the epilogue prints into its own file: the keeper's sys.stdout is never swapped
        outcome = run_code(code, EPILOGUE_FILENAME, _epilogue_globals(model, changes, output))
    finally:
        output.flush()
        model.transaction = saved
        os.close(fd)
    try:
        result["epilogue_stdout"] = path.read_text(encoding="utf-8", errors="replace") or None
    finally:
        path.unlink(missing_ok=True)
    result["epilogue_truncated"] = output.truncated
    if not outcome.ok and outcome.error:
        error = outcome.error
        result["failures"].append({"severity": "warning", "message": (
            f"the change report could not be completed: {error['type']}: {error['message']} "
            f"(epilogue line {error.get('line')})")})
    if guard.touched_anything:
        result["ok"] = False
        result["error"] = {"type": "EpilogueModifiedModel", "line": None, "traceback": "", "message": (
            "the host's change-report script modified the model, so the automation was not committed")}


def _epilogue_globals(model: ifcopenshell.file, changes: ChangeSet, output: CappedOutput) -> dict[str, Any]:
    def nexus_changes() -> dict[str, list[int]]:
        return changes.as_contract()

    def nexus_deleted_info() -> dict[int, dict[str, Any]]:
        return {k: dict(v) for k, v in changes.deleted_info.items()}

    def nexus_geometry_changed() -> list[int]:
        return list(changes.geometry)

    return {"__name__": "__main__", "__builtins__": __builtins__, "print": functools.partial(print, file=output),
            "model": model, "ifcopenshell": ifcopenshell,
            "nexus_changes": nexus_changes, "nexus_deleted_info": nexus_deleted_info,
            "nexus_geometry_changed": nexus_geometry_changed, "nexus_change_details": lambda: changes.details,
            **epilogue_helpers(model)}


def epilogue_helpers(model: ifcopenshell.file) -> dict[str, Callable[..., Any]]:
    """What the epilogue asks the host instead of carrying its own copy: the storey rule and the kinds' words."""
    return {"nexus_storey_ids": lambda element_ids: storey_ids(model, element_ids),
            "nexus_storey_labels": lambda: storey_labels(model), "nexus_kind_words": lambda: dict(KIND_WORDS)}
