"""Typed values for the host protocol (shared_contract/host/*.json), for the parties that run CPython: the
orchestrator and the IFC host. The Revit runtime (IronPython 2.7) keeps plain dicts checked by the same schemas.

Each message is a frozen dataclass mirroring its schema: a field per property (the `type` discriminator is the
class's TYPE), required properties are the fields without a default, nested objects that code reads field by
field are dataclasses too (ErrorInfo, Changes, Failure, Epilogue, ModelRef, ...), the others stay dicts.
`from_dict` checks the wire dict against the schema (a ContractError names each offending field) and builds
the value; `to_dict` gives the wire dict back (absent optional fields are left out, except those the wire
carries as null, marked NULL_ON_WIRE). tests/test_host_messages.py holds every class to its schema, so the
two cannot drift apart.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, ClassVar, Literal, TypeVar

from shared_contract.validate import ContractError, check

NULL_ON_WIRE = {"null_on_wire": True}  # field metadata: None goes over the wire as null, not left out
EXTRA = "extra"  # the field that keeps the properties an open object (additionalProperties) carries beyond ours

W = TypeVar("W", bound="WireObject")


class WireObject:
    """A dataclass mirroring one object schema (`SCHEMA`: a file under shared_contract/, or a part of one)."""

    SCHEMA: ClassVar[str]

    @classmethod
    def from_dict(cls: type[W], data: Any) -> W:
        """The value of a wire dict, checked against the schema first (ContractError names what is wrong)."""
        check(cls.SCHEMA, data, f"{cls.TYPE} message" if issubclass(cls, Message) else cls.__name__)
        return cls.build(data)

    @classmethod
    def build(cls: type[W], data: Mapping[str, Any]) -> W:
        """The value of a wire dict already checked (nested objects are built by their parent's from_dict)."""
        hints = field_types(cls)
        known = {f.name for f in dataclasses.fields(cls)} - {EXTRA}  # type: ignore[arg-type]
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            if key in known:
                values[key] = _decode(hints[key], value)
            elif not (key == "type" and issubclass(cls, Message)):
                extra[key] = value
        if extra:
            if EXTRA not in hints:  # the schema would have refused it; a programming error if reached
                raise ContractError(f"invalid {cls.__name__}: {', '.join(sorted(extra))}: not a property of it")
            values[EXTRA] = extra
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The wire dict: optional fields that are None are left out, except those marked NULL_ON_WIRE."""
        out: dict[str, Any] = {"type": self.TYPE} if isinstance(self, Message) else {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.name == EXTRA:
                continue
            value = getattr(self, f.name)
            if value is None and not f.metadata.get("null_on_wire"):
                continue
            out[f.name] = _encode(value)
        out.update(getattr(self, EXTRA, None) or {})
        return out


class Message(WireObject):
    """A whole host-protocol message; its `type` property is the class's TYPE."""

    TYPE: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "TYPE" in cls.__dict__:
            cls.SCHEMA = f"host/{cls.TYPE}.json"


@cache
def field_types(cls: type) -> dict[str, Any]:
    """The resolved annotation of each dataclass field of `cls`."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _without_none(hint: Any) -> Any:
    """X for `X | None`; the hint itself otherwise."""
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        return rest[0] if len(rest) == 1 else hint
    return hint


def _decode(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    hint = _without_none(hint)
    if isinstance(hint, type) and issubclass(hint, WireObject):
        return hint.build(value)
    if typing.get_origin(hint) is tuple:
        item = typing.get_args(hint)[0]
        return tuple(_decode(item, v) for v in value)
    if typing.get_origin(hint) in (dict, Mapping) or hint in (dict, Mapping):
        return dict(value)
    return value


def _encode(value: Any) -> Any:
    if isinstance(value, WireObject):
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _encode(v) for k, v in value.items()}
    return value


# --- nested objects ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ErrorInfo(WireObject):
    """Why a script or the host's own handling of it failed ({type, message, line, traceback}). Written in
    full (line as null, traceback as "" when there is none), as every host always has."""

    SCHEMA: ClassVar[str] = "host/execute_result.json#/properties/error"
    type: str
    message: str
    line: int | None = field(default=None, metadata=NULL_ON_WIRE)
    traceback: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Changes(WireObject):
    """The step ids an automation added, modified and deleted."""

    SCHEMA: ClassVar[str] = "host/execute_result.json#/properties/changes"
    added: tuple[int, ...]
    modified: tuple[int, ...]
    deleted: tuple[int, ...]


NO_CHANGES = Changes((), (), ())


@dataclass(frozen=True)
class Failure(WireObject):
    """A warning or error the host itself raised during a run."""

    SCHEMA: ClassVar[str] = "host/execute_result.json#/properties/failures/items"
    severity: Literal["warning", "error"]
    message: str
    element_ids: tuple[int, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Epilogue(WireObject):
    """The read-only script composed in the cloud that reports an automation's changes, stamped."""

    SCHEMA: ClassVar[str] = "host/execute.json#/properties/epilogue"
    code: str
    sha256: str
    capability_version: str


@dataclass(frozen=True)
class ModelRef(WireObject):
    """A reference model of a federated session: read-only, `refs[name]` in scripts."""

    SCHEMA: ClassVar[str] = "host/execute.json#/properties/refs/items"
    name: str
    path: str


@dataclass(frozen=True)
class SceneChanges(WireObject):
    """The change report's step ids a scene marks (each list optional)."""

    SCHEMA: ClassVar[str] = "host/export_scene.json#/properties/changes"
    added: tuple[int, ...] | None = None
    modified: tuple[int, ...] | None = None
    deleted: tuple[int, ...] | None = None


@dataclass(frozen=True)
class DoctorCheck(WireObject):
    SCHEMA: ClassVar[str] = "host/doctor_result.json#/properties/checks/items"
    id: str
    title: str
    ok: bool
    detail: str
    fallback: str


# --- messages ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hello(Message):
    """host -> cloud, first: what the host runtime is and which document it has open."""

    TYPE: ClassVar[str] = "hello"
    host_app: str
    host_version: str
    runtime_version: str
    python_version: str
    document: Mapping[str, Any]
    host_id: str | None = None
    capabilities: tuple[str, ...] | None = None

    def has(self, capability: str) -> bool:
        """Whether the host announced this capability (e.g. "hold", "context")."""
        return capability in (self.capabilities or ())


@dataclass(frozen=True)
class Welcome(Message):
    TYPE: ClassVar[str] = "welcome"
    host_id: str


@dataclass(frozen=True)
class ExecuteCommand(Message):
    """cloud -> host: run a script in one transaction (collect: always rolled back)."""

    TYPE: ClassVar[str] = "execute"
    request_id: str
    mode: Literal["collect", "automate"]
    code: str
    timeout_s: float
    epilogue: Epilogue | None = None
    hold: bool | None = None
    validation: Literal["warn", "block"] | None = None
    ids: str | None = None
    rules: Mapping[str, Any] | None = None
    review: bool | None = None
    refs: tuple[ModelRef, ...] | None = None

    @property
    def holds(self) -> bool:
        """Whether the host keeps the transaction open for a decision (only an automation can be held)."""
        return bool(self.hold) and self.mode == "automate"


@dataclass(frozen=True)
class ExecuteResult(Message):
    """host -> cloud: the outcome of an execute (or of the decision on a held one)."""

    TYPE: ClassVar[str] = "execute_result"
    request_id: str
    ok: bool
    committed: bool
    stdout: str
    failures: tuple[Failure, ...]
    changes: Changes
    duration_ms: float
    error: ErrorInfo | None = field(default=None, metadata=NULL_ON_WIRE)
    change_details: Mapping[str, Any] | None = None
    validation: Mapping[str, Any] | None = None
    epilogue_stdout: str | None = field(default=None, metadata=NULL_ON_WIRE)
    script_ms: float | None = None
    commit_ms: float | None = None
    unchanged: bool | None = None
    timed_out: bool | None = None
    cancelled: bool | None = None
    stdout_truncated: bool | None = None
    held: bool | None = None
    details: Mapping[str, Any] | None = None
    external_changes: Mapping[str, Any] | None = None
    blocked: tuple[str, ...] | None = None
    dialogs: tuple[Mapping[str, Any], ...] | None = None


@dataclass(frozen=True)
class ExportView(Message):
    TYPE: ClassVar[str] = "export_view"
    request_id: str
    max_px: int
    view: str | None = None
    element_ids: tuple[int, ...] | None = None
    refs: tuple[ModelRef, ...] | None = None


@dataclass(frozen=True)
class ExportViewResult(Message):
    TYPE: ClassVar[str] = "export_view_result"
    request_id: str
    ok: bool
    png_base64: str | None = None
    width: int | None = None
    height: int | None = None
    view: str | None = None
    undrawn: int | None = None
    simplified: int | None = None
    boxed: int | None = None
    sketched: int | None = None
    building: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class Decide(Message):
    TYPE: ClassVar[str] = "decide"
    request_id: str
    decision: Literal["keep", "discard"]


@dataclass(frozen=True)
class Decided(Message):
    TYPE: ClassVar[str] = "decided"
    request_id: str
    decision: Literal["keep", "discard"]
    by: str | None = None


@dataclass(frozen=True)
class Ping(Message):
    TYPE: ClassVar[str] = "ping"
    nonce: str | None = None


@dataclass(frozen=True)
class Pong(Message):
    TYPE: ClassVar[str] = "pong"
    nonce: str | None = None


@dataclass(frozen=True)
class ErrorMessage(Message):
    """Either direction: a malformed or unanswerable message."""

    TYPE: ClassVar[str] = "error"
    message: str
    request_id: str | None = field(default=None, metadata=NULL_ON_WIRE)


@dataclass(frozen=True)
class Context(Message):
    TYPE: ClassVar[str] = "context"
    request_id: str


@dataclass(frozen=True)
class ContextResult(Message):
    TYPE: ClassVar[str] = "context_result"
    request_id: str
    ok: bool
    error: str | None = None
    context: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Doctor(Message):
    TYPE: ClassVar[str] = "doctor"
    request_id: str


@dataclass(frozen=True)
class DoctorResult(Message):
    TYPE: ClassVar[str] = "doctor_result"
    runtime_version: str
    host_version: str
    python_version: str
    ok: bool
    checks: tuple[DoctorCheck, ...]
    request_id: str | None = None


@dataclass(frozen=True)
class Abort(Message):
    TYPE: ClassVar[str] = "abort"
    request_id: str


@dataclass(frozen=True)
class Aborted(Message):
    TYPE: ClassVar[str] = "aborted"
    request_id: str
    state: Literal["none"]
    message: str | None = None


@dataclass(frozen=True)
class ExportScene(Message):
    TYPE: ClassVar[str] = "export_scene"
    request_id: str
    view: str | None = None
    element_ids: tuple[int, ...] | None = None
    global_ids: tuple[str, ...] | None = None
    changes: SceneChanges | None = None
    before_of: str | None = None
    held_of: str | None = None
    refs: tuple[ModelRef, ...] | None = None
    max_bytes: int | None = None
    time_budget_s: float | None = None


@dataclass(frozen=True)
class ExportSceneResult(Message):
    TYPE: ClassVar[str] = "export_scene_result"
    request_id: str
    ok: bool
    glb_base64: str | None = None
    view: str | None = None
    nodes: int | None = None
    counts: Mapping[str, int] | None = None
    undrawn: int | None = None
    omitted_for_size: int | None = None
    omitted_for_time: int | None = None
    references: Mapping[str, int] | None = None
    before_missing: bool | None = None
    error: str | None = None


@dataclass(frozen=True)
class ShowElements(Message):
    TYPE: ClassVar[str] = "show_elements"
    request_id: str
    element_ids: tuple[int, ...]


@dataclass(frozen=True)
class ShowElementsResult(Message):
    TYPE: ClassVar[str] = "show_elements_result"
    request_id: str
    ok: bool
    shown: tuple[int, ...] | None = None
    missing: tuple[int, ...] | None = None
    zoomed: bool | None = None
    view: str | None = None
    document: str | None = None
    note: str | None = None
    error: str | None = None


MESSAGES: dict[str, type[Message]] = {cls.TYPE: cls for cls in (
    Hello, Welcome, ExecuteCommand, ExecuteResult, ExportView, ExportViewResult, Decide, Decided, Ping, Pong,
    ErrorMessage, Context, ContextResult, Doctor, DoctorResult, Abort, Aborted, ExportScene, ExportSceneResult,
    ShowElements, ShowElementsResult)}
NESTED: tuple[type[WireObject], ...] = (ErrorInfo, Changes, Failure, Epilogue, ModelRef, SceneChanges, DoctorCheck)


def parse_host_message(data: Any) -> Message:
    """The typed value of any host-protocol message (checked against its schema; ContractError otherwise)."""
    kind = data.get("type") if isinstance(data, dict) else None
    if kind not in MESSAGES:
        raise ContractError(f"invalid host message: type: unknown message type {kind!r}")
    return MESSAGES[kind].from_dict(data)
